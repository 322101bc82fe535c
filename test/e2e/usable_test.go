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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// usableClaims is how many claims TestPodAdmittedTheInstantClaimIsReady makes at once.
const usableClaims = 20

// Ready means usable: a pipeline that creates a Pod with the tenant's kubeconfig the instant its watch
// sees Ready=True, with no retry and no sleep, gets it admitted. The class has a quota that limits
// CPU and memory requests (so a Pod is refused while the quota's status is not computed, and one
// without requests is refused unless the LimitRange gives it defaults) and a LimitRange; the Pod names
// no ServiceAccount (so it gets `default`) and no resources, and passes Pod Security restricted. Pods
// never run: the local cluster has no kubelet, admission is what is tested. It prints, for each claim
// that was seen waiting for its namespace to be usable, how long that lasted (the wait's cost).
func TestPodAdmittedTheInstantClaimIsReady(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-usable"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "usable-"}, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods:           resource.MustParse("5"),
			corev1.ResourceRequestsCPU:    resource.MustParse("1"),
			corev1.ResourceRequestsMemory: resource.MustParse("1Gi"),
			corev1.ResourceLimitsCPU:      resource.MustParse("2"),
			corev1.ResourceLimitsMemory:   resource.MustParse("2Gi"),
		}},
		LimitRange: &corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}}},
	}}
	g.Expect(admin.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(ctx, class) })
	p := newPipeline(t, "usable")
	pcfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	watcher, err := client.NewWithWatch(pcfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	quotaLag := watchQuotaLag(t, class.Spec.Naming.Prefix)
	results := make([]usableResult, usableClaims)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = claimAndCreatePod(watcher, p, fmt.Sprintf("usable-%d", i), class.Name) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, r := range results {
			if r.claim != nil {
				_ = admin.Delete(ctx, r.claim)
			}
		}
	})

	var waits []time.Duration
	readies := make([]time.Duration, 0, len(results))
	for _, r := range results {
		g.Expect(r.err).NotTo(HaveOccurred())
		readies = append(readies, r.ready.Sub(r.created))
		if !r.waiting.IsZero() {
			waits = append(waits, r.ready.Sub(r.waiting))
		}
	}
	t.Logf("%d of %d Pods admitted at the instant their claim was seen Ready; created -> Ready median %s (max %s)",
		len(results), usableClaims, median(readies), slices.Max(readies))
	if len(waits) > 0 {
		t.Logf("%d of %d claims were seen waiting for the namespace to be usable (%s); from that to Ready (the wait plus the self-test and the token): median %s (max %s)",
			len(waits), usableClaims, waitedFor(results), median(waits), slices.Max(waits))
	} else {
		t.Logf("no claim was seen waiting for its namespace to be usable")
	}
	if lags := quotaLag(); len(lags) > 0 {
		t.Logf("kube-controller-manager computed the status of %d quotas a median %s (max %s) after their creation was seen: the longest a claim can wait for it",
			len(lags), median(lags), slices.Max(lags))
	}
	states := map[string]int{}
	for _, r := range results {
		states[strings.Join(r.states, " -> ")]++
	}
	for seq, n := range states {
		t.Logf("%d claims went through: %s", n, seq)
	}
}

// watchQuotaLag watches, as the admin, the class quotas of namespaces with the prefix, and returns a
// function that stops the watch and returns, for each quota whose creation and computed status it saw,
// the time between the two.
func watchQuotaLag(t *testing.T, prefix string) func() []time.Duration {
	t.Helper()
	g := NewWithT(t)
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.ResourceQuotaList{},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "nsclaim-quota")})
	g.Expect(err).NotTo(HaveOccurred())
	added, lags := map[string]time.Time{}, map[string]time.Duration{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			q, ok := ev.Object.(*corev1.ResourceQuota)
			if !ok || !strings.HasPrefix(q.Namespace, prefix) {
				continue
			}
			if ev.Type == watch.Added && len(q.Status.Hard) == 0 {
				added[q.Namespace] = time.Now()
			}
			if at, seen := added[q.Namespace]; seen && len(q.Status.Hard) > 0 {
				if _, done := lags[q.Namespace]; !done {
					lags[q.Namespace] = time.Since(at)
				}
			}
		}
	}()
	return func() []time.Duration {
		w.Stop()
		<-done
		out := make([]time.Duration, 0, len(lags))
		for _, d := range lags {
			out = append(out, d)
		}
		return out
	}
}

// usableResult is what one claim of TestPodAdmittedTheInstantClaimIsReady saw.
type usableResult struct {
	claim *tenancyv1alpha1.NamespaceClaim
	// created, waiting and ready are when the claim was created, first seen waiting for its namespace
	// to be usable (zero if never), and first seen Ready.
	created, waiting, ready time.Time
	// waitMessage is the NamespaceReady message while waiting.
	waitMessage string
	// states are the Ready condition's successive reasons as the watch delivered them.
	states []string
	err    error
}

// claimAndCreatePod watches a claim it creates as the pipeline and, the moment the watch delivers
// Ready=True, reads the credentials Secret and creates one Pod with the tenant's kubeconfig: one try.
func claimAndCreatePod(watcher client.WithWatch, p *pipeline, name, class string) usableResult {
	res := usableResult{}
	w, err := watcher.Watch(ctx, &tenancyv1alpha1.NamespaceClaimList{}, client.InNamespace(p.ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		res.err = fmt.Errorf("watching claim %s: %w", name, err)
		return res
	}
	defer w.Stop()
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns}, Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: class}}
	res.created = time.Now()
	if err := p.client.Create(ctx, claim); err != nil {
		res.err = fmt.Errorf("creating claim %s: %w", name, err)
		return res
	}
	res.claim = claim
	timeout := time.After(2 * time.Minute)
	for {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-timeout:
			res.err = fmt.Errorf("claim %s: not Ready within 2m", name)
			return res
		}
		got, ok := ev.Object.(*tenancyv1alpha1.NamespaceClaim)
		if !ok {
			res.err = fmt.Errorf("claim %s: watch delivered %T (%s)", name, ev.Object, ev.Type)
			return res
		}
		if nr := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.NamespaceReadyCondition); nr != nil &&
			nr.Reason == tenancyv1alpha1.PendingReason && res.waiting.IsZero() {
			res.waiting, res.waitMessage = time.Now(), nr.Message
		}
		if rc := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ReadyCondition); rc != nil {
			st := rc.Reason
			if nr := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.NamespaceReadyCondition); nr != nil && nr.Reason == tenancyv1alpha1.PendingReason {
				st += " (" + waitedFor([]usableResult{{waitMessage: nr.Message}}) + ")"
			}
			if len(res.states) == 0 || res.states[len(res.states)-1] != st {
				res.states = append(res.states, st)
			}
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			continue
		}
		res.ready = time.Now()
		res.err = createPodAsTenant(p, got)
		return res
	}
}

// createPodAsTenant creates, once, a Pod that fits the class with the kubeconfig of the claim's
// credentials Secret.
func createPodAsTenant(p *pipeline, claim *tenancyv1alpha1.NamespaceClaim) error {
	sec := &corev1.Secret{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: claim.Status.CredentialsSecretName}, sec); err != nil {
		return fmt.Errorf("claim %s: reading its Secret: %w", claim.Name, err)
	}
	tcfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data["kubeconfig"])
	if err != nil {
		return fmt.Errorf("claim %s: %w", claim.Name, err)
	}
	tenant, err := client.New(tcfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("claim %s: %w", claim.Name, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: claim.Status.Namespace}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), RunAsUser: ptr.To[int64](65535),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}},
	}}
	if err := tenant.Create(ctx, pod); err != nil {
		return fmt.Errorf("claim %s: creating a Pod in %s the instant it was Ready: %w", claim.Name, claim.Status.Namespace, err)
	}
	if pod.Spec.ServiceAccountName != "default" || pod.Spec.Containers[0].Resources.Requests.Cpu().IsZero() {
		return errors.New("the admitted Pod did not get the default ServiceAccount and the LimitRange's requests")
	}
	return nil
}

// waitedFor summarises what the claims were seen waiting for.
func waitedFor(results []usableResult) string {
	count := map[string]int{}
	for _, r := range results {
		if r.waitMessage == "" {
			continue
		}
		switch {
		case strings.Contains(r.waitMessage, "ResourceQuota"):
			count["the quota's status"]++
		case strings.Contains(r.waitMessage, "ServiceAccount"):
			count["the default ServiceAccount"]++
		default:
			count[r.waitMessage]++
		}
	}
	parts := make([]string, 0, len(count))
	for k, n := range count {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}
