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

package fence

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nsclaim/nsclaim-operator/internal/testenv"
)

// TestRunnable runs the checker against a real kube-apiserver (envtest), reading as a user that has
// only the RBAC of this package's marker: the shipped fence, created from the embedded YAML, is found
// intact (so the YAML spells out every default), and removing a validation, deleting the binding and
// restoring both are each reported by the next check.
func TestRunnable(t *testing.T) {
	env, cfg := startEnvtest(t)
	g := NewWithT(t)
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	reader := readerWithMarkerRBAC(ctx, t, env, admin)
	want, err := Shipped()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin.Create(ctx, want.Policy.DeepCopy())).To(Succeed())
	g.Expect(admin.Create(ctx, want.Binding.DeepCopy())).To(Succeed())
	g.Expect(admin.Create(ctx, want.LabelGuard.DeepCopy())).To(Succeed())
	g.Expect(admin.Create(ctx, want.LabelGuardBinding.DeepCopy())).To(Succeed())

	results := make(chan Status, 100)
	runnable := NewRunnable(reader, want, 50*time.Millisecond, func(s Status) {
		select {
		case results <- s:
		default: // the test reads the newest results; dropping some while it is busy is fine
		}
	})
	done := make(chan error)
	go func() { done <- runnable.Start(ctx) }()
	latest := func() Status { return <-results }

	g.Eventually(latest).Should(Equal(Status{Intact: true, Release: want.Release, Found: []string{want.Release}}))

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(want.Policy), policy)).To(Succeed())
	policy.Spec.Validations = policy.Spec.Validations[1:]
	g.Expect(admin.Update(ctx, policy)).To(Succeed())
	g.Eventually(latest).Should(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
	}, Found: []string{want.Release}}))

	g.Expect(admin.Delete(ctx, want.Binding.DeepCopy())).To(Succeed())
	g.Eventually(latest).Should(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
		"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
	}, Found: []string{want.Release}}))

	policy.Spec.Validations = want.Policy.Spec.Validations
	g.Expect(admin.Update(ctx, policy)).To(Succeed())
	g.Expect(admin.Create(ctx, want.Binding.DeepCopy())).To(Succeed())
	g.Eventually(latest).Should(Equal(Status{Intact: true, Release: want.Release, Found: []string{want.Release}}))

	g.Expect(admin.Delete(ctx, want.LabelGuardBinding.DeepCopy())).To(Succeed())
	g.Eventually(latest).Should(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
	}, Found: []string{want.Release}}))
	g.Expect(admin.Create(ctx, want.LabelGuardBinding.DeepCopy())).To(Succeed())
	g.Eventually(latest).Should(Equal(Status{Intact: true, Release: want.Release, Found: []string{want.Release}}))

	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestRunnableWatches: with WithWatch, applying, breaking and repairing the fence are each reported within
// seconds although the periodic check is an hour away, watching as a user that has only the markers' RBAC
// (list and watch by name).
func TestRunnableWatches(t *testing.T) {
	env, cfg := startEnvtest(t)
	g := NewWithT(t)
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reader, userCfg := userWithMarkerRBAC(ctx, t, env, admin)
	want, err := Shipped()
	g.Expect(err).NotTo(HaveOccurred())

	results := make(chan Status, 100)
	runnable := NewRunnable(reader, want, time.Hour, func(s Status) { results <- s }, WithWatch(userCfg))
	done := make(chan error)
	go func() { done <- runnable.Start(ctx) }()
	// The first check, at start, finds nothing.
	g.Eventually(results).Should(Receive(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicy nsclaim-operator-fence is missing", "ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
		"ValidatingAdmissionPolicy nsclaim-operator-label-guard is missing", "ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
	}, Found: []string{}})))

	var last Status
	latest := func() Status {
		for {
			select {
			case s := <-results:
				last = s
			default:
				return last
			}
		}
	}
	applied := time.Now()
	for _, o := range []client.Object{want.Policy, want.Binding, want.LabelGuard, want.LabelGuardBinding} {
		g.Expect(admin.Create(ctx, o.DeepCopyObject().(client.Object))).To(Succeed())
	}
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Intact: true, Release: want.Release, Found: []string{want.Release}}))
	t.Logf("fence applied: intact reported after %s", time.Since(applied).Round(time.Millisecond))

	g.Expect(admin.Delete(ctx, want.LabelGuardBinding.DeepCopy())).To(Succeed())
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
	}, Found: []string{want.Release}}))
	g.Expect(admin.Create(ctx, want.LabelGuardBinding.DeepCopy())).To(Succeed())
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Intact: true, Release: want.Release, Found: []string{want.Release}}))

	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestRunnableAcceptsThePreviousRelease: an operator whose own fence differs from the previous release's
// (here: one validation less, standing in for a change) reports the previous release's fence, as applied
// from its files (no version label), intact with Release naming it, while the upgrade is under way;
// this release's fence is intact as its own; a mix of the two is not intact, and says what is installed.
func TestRunnableAcceptsThePreviousRelease(t *testing.T) {
	env, cfg := startEnvtest(t)
	g := NewWithT(t)
	admin, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reader, userCfg := userWithMarkerRBAC(ctx, t, env, admin)
	prev, err := Previous()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(prev.Release).To(MatchRegexp(`^\d+\.\d+\.\d+$`))
	own, err := Shipped()
	g.Expect(err).NotTo(HaveOccurred())
	own.Policy.Spec.Validations = own.Policy.Spec.Validations[1:]
	own.Release = "9.9.9"

	for _, o := range []client.Object{prev.Policy, prev.Binding, prev.LabelGuard, prev.LabelGuardBinding} {
		g.Expect(admin.Create(ctx, o.DeepCopyObject().(client.Object))).To(Succeed())
	}
	results := make(chan Status, 100)
	runnable := NewRunnable(reader, own, time.Hour, func(s Status) { results <- s }, WithWatch(userCfg), AlsoAccept(prev))
	go func() { _ = runnable.Start(ctx) }()
	var last Status
	latest := func() Status {
		for {
			select {
			case s := <-results:
				last = s
			default:
				return last
			}
		}
	}
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Intact: true, Release: prev.Release, Found: []string{"unlabelled"}}))

	// An upgrade's apply: this release's fence policy and label guard (the label guard gained the warm
	// pool's rule; its version label is left as it was), so this release's fence is complete.
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(own.Policy), policy)).To(Succeed())
	policy.Spec.Validations = own.Policy.Spec.Validations
	// This release's rules use variables and match resources the previous release's did not have.
	policy.Spec.Variables = own.Policy.Spec.Variables
	policy.Spec.MatchConstraints = own.Policy.Spec.MatchConstraints
	policy.Labels = map[string]string{VersionLabel: own.Release}
	g.Expect(admin.Update(ctx, policy)).To(Succeed())
	guard := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(own.LabelGuard), guard)).To(Succeed())
	guard.Spec.MatchConstraints = own.LabelGuard.Spec.MatchConstraints
	guard.Spec.Variables = own.LabelGuard.Spec.Variables
	guard.Spec.Validations = own.LabelGuard.Spec.Validations
	g.Expect(admin.Update(ctx, guard)).To(Succeed())
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Intact: true, Release: own.Release, Found: []string{"9.9.9", "unlabelled"}}))

	// A policy altered further matches neither release's fence.
	policy.Spec.Validations = policy.Spec.Validations[1:]
	g.Expect(admin.Update(ctx, policy)).To(Succeed())
	g.Eventually(latest, 10*time.Second, 50*time.Millisecond).Should(Equal(Status{Problems: []string{
		"ValidatingAdmissionPolicy nsclaim-operator-fence: spec.validations differs from the shipped fence",
	}, Found: []string{"9.9.9", "unlabelled"}}))
}

// TestCheckWithoutRBAC: a checker that may not read the fence reports it as not known to be intact.
func TestCheckWithoutRBAC(t *testing.T) {
	env, cfg := startEnvtest(t)
	g := NewWithT(t)
	user, err := env.AddUser(envtest.User{Name: "nobody"}, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(user.Config(), client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	want, err := Shipped()
	g.Expect(err).NotTo(HaveOccurred())

	s := Check(context.Background(), c, want)
	g.Expect(s.Intact).To(BeFalse())
	g.Expect(s.Problems).To(HaveLen(4))
	g.Expect(s.Problems[0]).To(HavePrefix("ValidatingAdmissionPolicy nsclaim-operator-fence cannot be read: "))
	g.Expect(s.Problems[1]).To(HavePrefix("ValidatingAdmissionPolicyBinding nsclaim-operator-fence cannot be read: "))
	g.Expect(s.Problems[2]).To(HavePrefix("ValidatingAdmissionPolicy nsclaim-operator-label-guard cannot be read: "))
	g.Expect(s.Problems[3]).To(HavePrefix("ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard cannot be read: "))
}

// startEnvtest starts envtest's kube-apiserver and etcd from KUBEBUILDER_ASSETS for one test and stops
// them when it ends. Without KUBEBUILDER_ASSETS, or if the control plane does not start, the test is
// skipped with the reason, or fails if NSCLAIM_REQUIRE_ENVTEST is set (make test-unit sets it).
func startEnvtest(t *testing.T) (*envtest.Environment, *rest.Config) {
	t.Helper()
	return startEnvtestWith(t, &envtest.Environment{})
}

func startEnvtestWith(t *testing.T, env *envtest.Environment) (*envtest.Environment, *rest.Config) {
	t.Helper()
	return env, testenv.Start(t, env)
}

// readerWithMarkerRBAC returns an uncached client for a user bound to a ClusterRole holding exactly the
// rules of this package's +kubebuilder:rbac markers for the validating policies (get; list and watch).
func readerWithMarkerRBAC(ctx context.Context, t *testing.T, env *envtest.Environment, admin client.Client) client.Reader {
	t.Helper()
	c, _ := userWithMarkerRBAC(ctx, t, env, admin)
	return c
}

// userWithMarkerRBAC is readerWithMarkerRBAC and the user's rest.Config.
func userWithMarkerRBAC(ctx context.Context, t *testing.T, env *envtest.Environment, admin client.Client) (client.Reader, *rest.Config) {
	t.Helper()
	g := NewWithT(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fence-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups:     []string{admissionregistrationv1.GroupName},
		Resources:     []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
		ResourceNames: []string{"nsclaim-operator-fence", "nsclaim-operator-label-guard"},
		Verbs:         []string{"get", "list", "watch"},
	}}}
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fence-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "fence-reader"}},
	})).To(Succeed())
	user, err := env.AddUser(envtest.User{Name: "fence-reader"}, env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(rest.CopyConfig(user.Config()), client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	// RBAC caches settle within moments; wait until the binding is in effect.
	g.Eventually(func() error {
		err := c.Get(ctx, client.ObjectKey{Name: "nsclaim-operator-fence"}, &admissionregistrationv1.ValidatingAdmissionPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}).Should(Succeed())
	return c, rest.CopyConfig(user.Config())
}
