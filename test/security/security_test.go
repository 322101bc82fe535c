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

// Package security attacks a whole cluster as a compromised nsclaim would: with the operator's own
// ServiceAccount token, it tries to reach beyond the namespaces nsclaim owns (docs/security.md). It
// runs from hack/test-security.sh, twice: with the admission fence of config/fence installed, where
// every attack must be denied and change nothing while provisioning keeps working; and without it,
// where it records which attacks RBAC alone allows.
//
// Environment:
//
//	KUBECONFIG                   an admin kubeconfig (sets up victims, checks that nothing changed)
//	NSCLAIM_OPERATOR_KUBECONFIG  a kubeconfig with a token of the operator's ServiceAccount
//	NSCLAIM_FENCE                "installed" or "absent": whether config/fence is applied; "previous":
//	                             only the previous release's fence (internal/fence/previous) is, with
//	                             this release's RBAC (an upgrade whose fence.yaml was not applied)
//	NSCLAIM_SECURITY_RESULTS     optional directory for <fence>.json results and, after both runs, table.md
package security

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
)

var (
	ctx      = context.Background()
	scheme   = runtime.NewScheme()
	admin    client.Client
	adminCfg *rest.Config
	operator client.Client
	opConfig *rest.Config
	// mode is "installed" or "absent"; objects made by a run carry it in their names.
	mode string
)

const (
	className = "security"
	// requestsNamespace is the ConfigMap protocol's, as hack/test-security.sh starts the operator.
	requestsNamespace = "nsplease-requests"
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	mode = os.Getenv("NSCLAIM_FENCE")
	if os.Getenv("KUBECONFIG") == "" || os.Getenv("NSCLAIM_OPERATOR_KUBECONFIG") == "" || (mode != "installed" && mode != "absent" && mode != "previous") {
		fmt.Fprintln(os.Stderr, "KUBECONFIG, NSCLAIM_OPERATOR_KUBECONFIG and NSCLAIM_FENCE=installed|absent|previous must be set: run `make test-security`")
		os.Exit(1)
	}
	var err error
	adminCfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	exitOn(err)
	admin, err = client.New(adminCfg, client.Options{Scheme: scheme})
	exitOn(err)
	opConfig, err = clientcmd.BuildConfigFromFlags("", os.Getenv("NSCLAIM_OPERATOR_KUBECONFIG"))
	exitOn(err)
	operator, err = client.New(opConfig, client.Options{Scheme: scheme})
	exitOn(err)
	class := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "sec-"},
		NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces, PodSecurity: tenancyv1alpha1.PodSecurityRestricted,
	}}
	if err := admin.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		exitOn(err)
	}
	code := m.Run()
	if err := recordResults(); err != nil {
		fmt.Fprintln(os.Stderr, "recording results:", err)
		code = 1
	}
	os.Exit(code)
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestFenceState: the operator's fence checker sees the fence exactly when it is installed.
func TestFenceState(t *testing.T) {
	g := NewWithT(t)
	want, err := fence.Shipped()
	g.Expect(err).NotTo(HaveOccurred())
	if mode == "previous" {
		previous, err := fence.Previous()
		g.Expect(err).NotTo(HaveOccurred())
		s := fence.CheckAccepted(ctx, operator, []fence.Expected{want, previous})
		g.Expect(s.Intact).To(BeTrue(), "the previous release's fence as kustomize applies it matches internal/fence/previous: %v", s.Problems)
		g.Expect(s.Release).To(Equal(previous.Release))
		return
	}
	s := fence.Check(ctx, operator, want)
	if mode == "installed" {
		g.Expect(s).To(Equal(fence.Status{Intact: true}), "config/fence as applied by kustomize matches what the operator expects")
		return
	}
	g.Expect(s.Intact).To(BeFalse())
	g.Expect(s.Problems).To(ConsistOf(
		"ValidatingAdmissionPolicy nsclaim-operator-fence is missing",
		"ValidatingAdmissionPolicyBinding nsclaim-operator-fence is missing",
		"ValidatingAdmissionPolicy nsclaim-operator-label-guard is missing",
		"ValidatingAdmissionPolicyBinding nsclaim-operator-label-guard is missing",
	))
}

// TestProvisioningWorks: with the fence, the operator provisions and cleans up a claim as usual.
// Without it (and the operator requiring it, the default), the claim is refused with FenceNotIntact
// and no namespace is created.
func TestProvisioningWorks(t *testing.T) {
	g := NewWithT(t)
	if mode == "absent" {
		claim := refusedForFence(t, "provision-"+mode)
		g.Expect(admin.Delete(ctx, claim)).To(Succeed())
		g.Eventually(gone(claim)).WithTimeout(30 * time.Second).Should(BeTrue())
		return
	}
	claim := provision(t, "provision-"+mode)
	sec := &corev1.Secret{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.CredentialsSecretName}, sec)).To(Succeed())
	g.Expect(sec.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))
	g.Expect(sec.Type).To(Equal(corev1.SecretTypeOpaque))

	g.Expect(admin.Delete(ctx, claim)).To(Succeed())
	g.Eventually(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.Namespace}})).
		WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
	g.Eventually(gone(claim)).WithTimeout(30 * time.Second).Should(BeTrue())
}

// TestConfigMapProtocolWorks: the operator (run with --requests-namespace nsplease-requests
// --requests-class security) created the requests namespace, answers a request ConfigMap with a Secret
// of the same name, and makes the provisioned namespace an owner of the ConfigMap, fence or not.
func TestConfigMapProtocolWorks(t *testing.T) {
	g := NewWithT(t)
	rq := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requestsNamespace}}
	g.Eventually(func() error { return admin.Get(ctx, client.ObjectKeyFromObject(rq), rq) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the operator creates the requests namespace")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nsp-security-" + mode, Namespace: requestsNamespace}}
	g.Expect(admin.Create(ctx, cm)).To(Succeed())
	if mode == "absent" {
		// Without the fence the request's claim is refused and nothing is provisioned.
		claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: requestsNamespace}}
		g.Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
			ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.FenceNotIntactReason))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		g.Expect(gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Name}})()).To(BeTrue(), "no namespace is created for the request")
		g.Expect(admin.Delete(ctx, cm)).To(Succeed())
		return
	}
	g.Eventually(func(g Gomega) {
		sec := &corev1.Secret{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(cm), sec)).To(Succeed())
		g.Expect(sec.Data).To(HaveKey("token"))
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		g.Expect(cm.OwnerReferences).To(ContainElement(HaveField("Kind", "Namespace")))
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

	g.Expect(admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Name}})).To(Succeed())
	g.Eventually(gone(cm)).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeTrue())
}

// refusedForFence creates a claim in a fresh requester namespace while the fence is absent and checks
// that the operator refuses it with FenceNotIntact and creates no namespace for it.
func refusedForFence(t *testing.T, requester string) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	g := NewWithT(t)
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requester}})
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: requester},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}}
	g.Expect(admin.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil(), "claim conditions: %+v", claim.Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.FenceNotIntactReason), "claim conditions: %+v", claim.Status.Conditions)
	}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	// Nothing was provisioned for it: no namespace carries its UID, and it names none.
	g.Consistently(func(g Gomega) {
		list := &corev1.NamespaceList{}
		g.Expect(admin.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ClaimUIDLabel: string(claim.UID)})).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.CredentialsSecretName).To(BeEmpty())
	}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
	return claim
}

// provision creates a claim in a fresh requester namespace and waits until it is Ready.
func provision(t *testing.T, requester string) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	g := NewWithT(t)
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: requester}})
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: requester},
		Spec: tenancyv1alpha1.NamespaceClaimSpec{ClassName: className}}
	g.Expect(admin.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue(),
			"claim conditions: %+v", claim.Status.Conditions)
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	return claim
}

// ensure creates obj as admin, tolerating one left by an earlier run.
func ensure(t *testing.T, obj client.Object) {
	t.Helper()
	if err := admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
}

func gone(obj client.Object) func() bool {
	return func() bool { return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj)) }
}

// attack is one attempt by the operator's identity to reach beyond what it owns.
type attack struct {
	name string
	// rbacDenies is true where the operator's RBAC alone must deny the attempt.
	rbacDenies bool
	// fenceDenies, when set, is the outcome required with the fence installed ("denied by fence" or
	// "denied by label guard"); otherwise any denial will do.
	fenceDenies string
	// do makes the attempt with the operator's client; a non-empty note describes what an allowed
	// attempt obtained (never the secret itself).
	do func(op client.Client) (note string, err error)
	// kept are objects that must be unchanged afterwards (same resourceVersion, not deleting).
	kept []client.Object
	// absent are objects the attempt would create, which must not exist afterwards.
	absent []client.Object
}

// outcome classifies the answer to an attempt.
func outcome(note string, err error) string {
	switch {
	case err == nil && note != "":
		return "allowed: " + note
	case err == nil:
		return "allowed"
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), fence.NamePrefix+"label-guard"):
		return "denied by label guard"
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
		return "denied by fence"
	case apierrors.IsForbidden(err):
		return "denied by RBAC"
	default:
		return fmt.Sprintf("failed (%s)", apierrors.ReasonForError(err))
	}
}

// TestAttacksAsTheOperator makes each attempt with the operator's token. With the fence installed
// every attempt must be denied and change nothing; without it, the attempts RBAC is meant to stop must
// still be denied by RBAC, and the rest are recorded.
func TestAttacksAsTheOperator(t *testing.T) {
	victim := "victim-" + mode
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}})
	victimSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password", Namespace: victim},
		StringData: map[string]string{"password": "hunter2"}}
	ensure(t, victimSecret)
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: victim}})
	victimConfig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: victim}, Data: map[string]string{"mode": "safe"}}
	ensure(t, victimConfig)
	victimBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "app-view", Namespace: victim},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: victim}}}
	ensure(t, victimBinding)
	// A ServiceAccount named like the tenants' in kube-system: the token rule's resourceNames match it.
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: metav1.NamespaceSystem}})
	ownedNS := ownedNamespace(t)
	victimNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victim}}
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}

	adminBinding := func(ns string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: victim}}}
	}
	mintToken := func(op client.Client, ns, name string) (string, error) {
		tr := &authenticationv1.TokenRequest{}
		err := op.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, tr)
		if err == nil && tr.Status.Token != "" {
			return "a token was issued", nil
		}
		return "", err
	}
	saTokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode, Namespace: metav1.NamespaceSystem,
		Labels:      map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "namespace-controller"}},
		Type: corev1.SecretTypeServiceAccountToken}
	mergePatch := func(op client.Client, obj client.Object, patch string) (client.Object, error) {
		target := obj.DeepCopyObject().(client.Object)
		return target, op.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	ownershipLabels := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:"x",%q:"x"}}}`, tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimUIDLabel, tenancyv1alpha1.ClaimNamespaceLabel)

	// The operator may bind the shared release ClusterRole (get and delete of namespaces): bound in a
	// namespace it did not create, it would let anyone named delete that namespace.
	releaseBinding := func(ns string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: claimpolicy.ReleaseRoleName, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: claimpolicy.ReleaseClusterRoleName},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: victim}}}
	}
	legacyRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode, Namespace: ownedNS.Name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{ownedNS.Name}, Verbs: []string{"get"}}}}

	attacks := []attack{{
		name:        "create a RoleBinding to the release ClusterRole in a namespace it did not create",
		fenceDenies: fenceDeny,
		do: func(op client.Client) (string, error) {
			return "", op.Create(ctx, releaseBinding(victim))
		},
		absent: []client.Object{releaseBinding(victim)},
	}, {
		name:        "create a RoleBinding to the release ClusterRole in kube-system",
		fenceDenies: fenceDeny,
		do: func(op client.Client) (string, error) {
			return "", op.Create(ctx, releaseBinding(metav1.NamespaceSystem))
		},
		absent: []client.Object{releaseBinding(metav1.NamespaceSystem)},
	}, {
		name:       "create a Role, even in a namespace it created",
		rbacDenies: true,
		do:         func(op client.Client) (string, error) { return "", op.Create(ctx, legacyRole.DeepCopy()) },
		absent:     []client.Object{legacyRole.DeepCopy()},
	}, {
		name: "create a RoleBinding to admin in kube-system",
		do: func(op client.Client) (string, error) {
			return "", op.Create(ctx, adminBinding(metav1.NamespaceSystem))
		},
		absent: []client.Object{adminBinding(metav1.NamespaceSystem)},
	}, {
		name: "create a RoleBinding to admin in default",
		do: func(op client.Client) (string, error) {
			return "", op.Create(ctx, adminBinding(metav1.NamespaceDefault))
		},
		absent: []client.Object{adminBinding(metav1.NamespaceDefault)},
	}, {
		name:       "mint a token for kube-system/default",
		rbacDenies: true,
		do:         func(op client.Client) (string, error) { return mintToken(op, metav1.NamespaceSystem, "default") },
	}, {
		name: "mint a token for kube-system/nsclaim-tenant",
		do: func(op client.Client) (string, error) {
			return mintToken(op, metav1.NamespaceSystem, tenancyv1alpha1.TenantServiceAccountName)
		},
	}, {
		name: "create a service-account-token Secret for kube-system/namespace-controller",
		do: func(op client.Client) (string, error) {
			if err := op.Create(ctx, saTokenSecret.DeepCopy()); err != nil {
				return "", err
			}
			// The token controller fills it in; a no-op patch then returns the token without `get`.
			var note string
			for range 20 {
				got, err := mergePatch(op, saTokenSecret, `{}`)
				if err == nil && len(got.(*corev1.Secret).Data[corev1.ServiceAccountTokenKey]) > 0 {
					return "the token controller filled it in and a no-op patch returned the token", nil
				}
				note = "created"
				time.Sleep(500 * time.Millisecond)
			}
			return note, nil
		},
		absent: []client.Object{saTokenSecret.DeepCopy()},
	}, {
		name:       "read a Secret in another namespace",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", op.Get(ctx, client.ObjectKeyFromObject(victimSecret), &corev1.Secret{})
		},
	}, {
		name:       "list Secrets in kube-system",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", op.List(ctx, &corev1.SecretList{}, client.InNamespace(metav1.NamespaceSystem))
		},
	}, {
		name: "read a foreign Secret from the response to a no-op patch",
		do: func(op client.Client) (string, error) {
			got, err := mergePatch(op, victimSecret, `{}`)
			if err == nil && len(got.(*corev1.Secret).Data["password"]) > 0 {
				return "the response carried the Secret's data", nil
			}
			return "", err
		},
		kept: []client.Object{victimSecret},
	}, {
		name: "label a foreign Secret as nsclaim's",
		do: func(op client.Client) (string, error) {
			_, err := mergePatch(op, victimSecret, ownershipLabels)
			return "", err
		},
		kept: []client.Object{victimSecret},
	}, {
		name: "change the data of a foreign ConfigMap",
		do: func(op client.Client) (string, error) {
			_, err := mergePatch(op, victimConfig, `{"data":{"mode":"pwned"}}`)
			return "", err
		},
		kept: []client.Object{victimConfig},
	}, {
		name:   "create a ServiceAccount in default",
		do:     func(op client.Client) (string, error) { return "", op.Create(ctx, sa(metav1.NamespaceDefault)) },
		absent: []client.Object{sa(metav1.NamespaceDefault)},
	}, {
		name: "delete a RoleBinding in a foreign namespace",
		do:   func(op client.Client) (string, error) { return "", op.Delete(ctx, victimBinding.DeepCopy()) },
		kept: []client.Object{victimBinding},
	}, {
		name: "label kube-system as owned by nsclaim",
		do: func(op client.Client) (string, error) {
			_, err := mergePatch(op, kubeSystem, ownershipLabels)
			return "", err
		},
		kept: []client.Object{kubeSystem},
	}, {
		name: "add the managed-by label to a foreign namespace",
		do: func(op client.Client) (string, error) {
			_, err := mergePatch(op, victimNS, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))
			return "", err
		},
		kept: []client.Object{victimNS},
	}, {
		name: "remove the ownership labels of an owned namespace",
		do: func(op client.Client) (string, error) {
			_, err := mergePatch(op, ownedNS, fmt.Sprintf(`{"metadata":{"labels":{%q:null,%q:null}}}`, tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ClaimUIDLabel))
			return "", err
		},
		kept: []client.Object{ownedNS},
	}, {
		name:       "bind cluster-admin cluster-wide",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", op.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: victim}}})
		},
		absent: []client.Object{&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode}}},
	}, {
		name:       "impersonate a cluster admin",
		rbacDenies: true,
		do: func(client.Client) (string, error) {
			cfg := rest.CopyConfig(opConfig)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return "", err
			}
			return "", c.List(ctx, &corev1.SecretList{}, client.InNamespace(metav1.NamespaceSystem))
		},
	}, {
		name:       "delete the fence",
		rbacDenies: true,
		do: func(op client.Client) (string, error) {
			return "", op.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: fence.NamePrefix + "fence"}})
		},
	}, {
		// Last: without the fence this deletes the victim namespace.
		name: "delete a foreign namespace",
		do:   func(op client.Client) (string, error) { return "", op.Delete(ctx, victimNS.DeepCopy()) },
		kept: []client.Object{victimNS},
	}}

	runAttacks(t, operator, attacks)
}

// runAttacks makes each attempt with the client c and records its outcome. With the fence installed
// every attempt must be denied and change nothing; without it, the attempts RBAC is meant to stop
// must still be denied by RBAC.
func runAttacks(t *testing.T, c client.Client, attacks []attack) {
	t.Helper()
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			g := NewWithT(t)
			// Each attempt is judged on its own: what it must not create may have been made by an earlier
			// run against this cluster (the fence-deleted run allows much), so it is removed first.
			for _, o := range a.absent {
				if err := admin.Delete(ctx, o.DeepCopyObject().(client.Object)); err == nil {
					g.Eventually(gone(o.DeepCopyObject().(client.Object))).WithTimeout(60 * time.Second).Should(BeTrue())
				}
			}
			before := map[client.Object]string{}
			for _, o := range a.kept {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
				before[o] = o.GetResourceVersion()
			}
			got := outcome(a.do(c))
			record(a.name, got)
			t.Logf("%s: %s", a.name, got)
			if a.rbacDenies {
				g.Expect(got).To(Equal("denied by RBAC"), "RBAC must not allow this")
			}
			if mode == "absent" {
				return
			}
			// The previous release's fence denies with its own messages; what it must do is deny.
			if a.fenceDenies != "" && mode == "installed" {
				g.Expect(got).To(Equal(a.fenceDenies), "the fence must deny this")
			}
			g.Expect(got).To(HavePrefix("denied by "))
			for _, o := range a.kept {
				now := o.DeepCopyObject().(client.Object)
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(o), now)).To(Succeed())
				g.Expect(now.GetResourceVersion()).To(Equal(before[o]), "%T %s changed", o, client.ObjectKeyFromObject(o))
				g.Expect(now.GetDeletionTimestamp()).To(BeNil())
			}
			for _, o := range a.absent {
				g.Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(o), o))).To(BeTrue(),
					"%T %s was created", o, client.ObjectKeyFromObject(o))
			}
		})
	}
}

// ownedNamespace returns a namespace nsclaim owns: with the fence (this release's, or the previous
// release's within its grace), one provisioned for a claim; without it (the operator then provisions
// nothing) a stand-in labelled as nsclaim's by the admin. Made once per run.
func ownedNamespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	g := NewWithT(t)
	if ownedName == "" {
		if mode != "absent" {
			ownedName = provision(t, "owner-"+mode).Status.Namespace
		} else {
			ownedName = "owned-" + mode
			ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownedName, Labels: map[string]string{
				tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.ClaimUIDLabel: "stand-in",
				tenancyv1alpha1.ClaimNamespaceLabel: "stand-in", "pod-security.kubernetes.io/enforce": "restricted",
			}}})
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownedName}}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ns), ns)).To(Succeed())
	return ns
}

// ownedName is the namespace ownedNamespace made.
var ownedName string

var (
	resultsMu sync.Mutex
	// results are this run's outcomes by attempt, in the order they were made.
	results     = map[string]string{}
	resultOrder []string
)

// record notes the outcome of one attempt for the results file and table.
func record(name, got string) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if _, seen := results[name]; !seen {
		resultOrder = append(resultOrder, name)
	}
	results[name] = got
}

// recordResults writes this run's outcomes to NSCLAIM_SECURITY_RESULTS/<mode>.json and, once both
// runs are there, the table of docs/security.md to table.md (rows in this run's order).
func recordResults() error {
	dir := os.Getenv("NSCLAIM_SECURITY_RESULTS")
	if dir == "" || len(results) == 0 {
		return nil
	}
	data, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, mode+".json"), data, 0o644); err != nil {
		return err
	}
	if mode == "previous" {
		// A subset of the suites; the table compares the two full runs.
		return nil
	}
	runs := map[string]map[string]string{}
	for _, m := range []string{"absent", "installed"} {
		data, err := os.ReadFile(filepath.Join(dir, m+".json"))
		if err != nil {
			return nil
		}
		run := map[string]string{}
		if err := json.Unmarshal(data, &run); err != nil {
			return err
		}
		runs[m] = run
	}
	var b strings.Builder
	b.WriteString("| Attempt (by the operator's ServiceAccount, unless it names another identity) | RBAC alone | RBAC and fence |\n|---|---|---|\n")
	for _, name := range resultOrder {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, runs["absent"][name], runs["installed"][name])
	}
	return os.WriteFile(filepath.Join(dir, "table.md"), []byte(b.String()), 0o644)
}

func sa(ns string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-" + mode, Namespace: ns}}
}
