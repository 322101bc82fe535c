/*
Copyright 2026 The nsclaim Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/test/invariants"
)

// TestClaimLimitHoldsUnderParallelCreates: a requester fans out 8 claims at the same moment, each
// with a client of its own (separate connections, as parallel CI jobs), against a class that allows 3
// per requester namespace, three rounds in a row. At no moment may more than 3 of its namespaces
// exist, and exactly 3 claims may become Ready; the others are refused with ClaimLimitExceeded.
func TestClaimLimitHoldsUnderParallelCreates(t *testing.T) {
	t.Parallel()
	const limit, burst, rounds = 3, 8, 3
	g := NewWithT(t)
	class := newClass(t, fmt.Sprintf("e2e-limit-%d", time.Now().UnixNano()%100000), tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "lim-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		Access: tenancyv1alpha1.AccessSpec{MaxClaimsPerNamespace: limit},
	})
	p := newRequester(t, "fanout")
	peak := watchLiveNamespaces(t, p.ns)
	for round := range rounds {
		clients := make([]client.Client, burst)
		for i := range clients {
			c, err := client.New(restConfigOf(t, p.kubeconfig), client.Options{Scheme: scheme})
			g.Expect(err).NotTo(HaveOccurred())
			clients[i] = c
		}
		claims := make([]*tenancyv1alpha1.NamespaceClaim, burst)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range burst {
			claims[i] = &tenancyv1alpha1.NamespaceClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d-%d", round, i), Namespace: p.ns},
				Spec:       tenancyv1alpha1.NamespaceClaimSpec{ClassName: class.Name},
			}
			wg.Go(func() {
				<-start
				if err := clients[i].Create(ctx, claims[i]); err != nil {
					t.Errorf("round %d: creating claim %d: %v", round, i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		var ready, refused int
		g.Eventually(func(g Gomega) {
			ready, refused = 0, 0
			for _, c := range claims {
				r := readyOf(g, c)
				switch r.Reason {
				case tenancyv1alpha1.ProvisionedReason:
					ready++
				case tenancyv1alpha1.ClaimLimitExceededReason:
					refused++
				}
			}
			g.Expect(ready + refused).To(Equal(burst))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		g.Expect(ready).To(Equal(limit), "round %d: %d claims Ready, %d refused", round, ready, refused)
		g.Expect(peak()).To(BeNumerically("<=", limit), "round %d: more namespaces than the limit existed at once", round)
		for _, c := range claims {
			g.Expect(client.IgnoreNotFound(p.client.Delete(ctx, c))).To(Succeed())
		}
		g.Eventually(func(g Gomega) {
			list := &corev1.NamespaceList{}
			g.Expect(admin.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ClaimNamespaceLabel: p.ns})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	t.Logf("at most %d namespaces of %s existed at once over %d rounds of %d parallel claims", peak(), p.ns, rounds, burst)
}

// watchLiveNamespaces watches, as admin, the namespaces made for claims of requesterNamespace, and
// returns a function that reports the most that existed at once (not being deleted) so far.
func watchLiveNamespaces(t *testing.T, requesterNamespace string) func() int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	live, err := invariants.WatchLiveNamespaces(wctx, cs, requesterNamespace)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return live.Peak
}

// restConfigOf is a new client configuration (its own connection) from a kubeconfig file.
func restConfigOf(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// TestPreviousHolderTokenNeverWorksInReclaimedNamespace: requester A holds a namespace of a fixed
// name; A's token (read from A's Secret) is used in a tight loop from before A releases the claim
// until well after requester C, who claims the same name the instant it is free, is Ready. The API
// server caches a token's successful authentication for 10 s, and C's tenant has A's tenant's user
// name: no request made after A's namespace was gone may succeed. Two rounds, since the attack needs
// the cache entry to outlive the namespace's deletion.
func TestPreviousHolderTokenNeverWorksInReclaimedNamespace(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	a, c := newRequester(t, "holder-a"), newRequester(t, "holder-c")
	for round := range 2 {
		want := fmt.Sprintf("reclaim-%d-%d", time.Now().UnixNano()%100000, round)
		first := createClaim(t, a, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("first-%d", round)},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: want}})
		waitReason(t, first, tenancyv1alpha1.ProvisionedReason)
		target := first.Status.Namespace
		sec := &corev1.Secret{}
		g.Expect(a.client.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: first.Status.CredentialsSecretName}, sec)).To(Succeed())
		old := restConfigOf(t, writeKubeconfig(t, secretToken(sec), target))
		old.QPS, old.Burst = 1000, 1000
		oldClient, err := kubernetes.NewForConfig(old)
		g.Expect(err).NotTo(HaveOccurred())

		// The attacker: list ConfigMaps in the namespace as fast as it can with the old token.
		var goneAt atomic.Pointer[time.Time]
		var before, violations atomic.Int64
		var lastViolation atomic.Value
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				_, err := oldClient.CoreV1().ConfigMaps(target).List(ctx, metav1.ListOptions{})
				if err != nil {
					// Refused (the token no longer authenticates, or nothing grants it): try again at
					// once, with a breath for the 2-core API server.
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if g := goneAt.Load(); g != nil && sent.After(*g) {
					violations.Add(1)
					lastViolation.Store(sent)
				} else {
					before.Add(1)
				}
			}
		}()
		// The old token works while A holds the namespace (the attack is real).
		g.Eventually(before.Load).WithTimeout(30 * time.Second).Should(BeNumerically(">", 0))

		g.Expect(a.client.Delete(ctx, first)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Name: target}, &corev1.Namespace{}))
		}).
			WithTimeout(2 * time.Minute).WithPolling(20 * time.Millisecond).Should(BeTrue())
		now := time.Now()
		goneAt.Store(&now)
		second := createClaim(t, c, &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("second-%d", round)},
			Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className, NamespaceName: want}})
		// The new holder's namespace is created at once; its grants wait.
		g.Eventually(func() error { return admin.Get(ctx, client.ObjectKey{Name: target}, &corev1.Namespace{}) }).
			WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
		waitReason(t, second, tenancyv1alpha1.ProvisionedReason)
		g.Expect(second.Status.Namespace).To(Equal(target))
		// Keep attacking past the window of the token cache after Ready.
		time.Sleep(12 * time.Second)
		close(stop)
		<-done
		g.Expect(violations.Load()).To(BeZero(), "round %d: A's token listed ConfigMaps in C's namespace %s %d times (last at %v)",
			round, target, violations.Load(), lastViolation.Load())

		// The grants were made a window after the namespace: the tenant RoleBinding is no older.
		ns := &corev1.Namespace{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: target}, ns)).To(Succeed())
		rbs := &rbacv1.RoleBindingList{}
		g.Expect(admin.List(ctx, rbs, client.InNamespace(target), client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(second.UID)})).To(Succeed())
		g.Expect(rbs.Items).NotTo(BeEmpty())
		for _, rb := range rbs.Items {
			g.Expect(rb.CreationTimestamp.Sub(ns.CreationTimestamp.Time)).To(BeNumerically(">=", 14*time.Second),
				"RoleBinding %s was made %v after the reused namespace", rb.Name, rb.CreationTimestamp.Sub(ns.CreationTimestamp.Time))
		}
		g.Expect(meta.IsStatusConditionTrue(second.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(client.IgnoreNotFound(c.client.Delete(ctx, second))).To(Succeed())
		g.Eventually(namespaceGoing(target)).WithTimeout(time.Minute).Should(BeTrue())
	}
}
