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

package security

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// Attacks found by an adversarial run against the first fence, and the attack on the operator's
// memory through its caches. Each is made with the attacker's own token (the operator's, or a
// requester's), never as admin; the admin only sets up victims and checks that nothing changed.

const (
	psaEnforce = "pod-security.kubernetes.io/enforce"
	fenceDeny  = "denied by fence"
	guardDeny  = "denied by label guard"
)

// createOnce creates obj with c; an object that got created (the attempt was allowed) is deleted again
// at once as admin, so that the next attempt under the same name is judged on its own.
func createOnce(c client.Client, obj client.Object) func(client.Client) (string, error) {
	return func(client.Client) (string, error) {
		created := obj.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, created); err != nil {
			return "", err
		}
		_ = admin.Delete(ctx, created)
		return "", nil
	}
}

// ownership returns nsclaim's ownership labels with made-up values.
func ownership() map[string]string {
	return map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.ClaimUIDLabel: "forged", tenancyv1alpha1.ClaimNamespaceLabel: "forged"}
}

// mintTokenValue requests a token for ns/name with c and returns it.
func mintTokenValue(c client.Client, ns, name string) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, tr); err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// tokenClient returns a client that authenticates with token against the test cluster.
func tokenClient(token string) (client.Client, error) {
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = token
	return client.New(cfg, client.Options{Scheme: scheme})
}

// TestOperatorCannotCreatePrivilegedNamespace: the operator creates a namespace labelled as its own
// with Pod Security privileged (or none), puts the tenant ServiceAccount there, binds admin, mints its
// token and runs a privileged hostPath Pod. The fence requires enforce=baseline or restricted on every
// namespace the operator creates or changes.
func TestOperatorCannotCreatePrivilegedNamespace(t *testing.T) {
	chain := func(level string) func(op client.Client) (string, error) {
		return func(op client.Client) (string, error) {
			name := "pwn-psa-" + level + "-" + mode
			labels := ownership()
			if level != "unlabelled" {
				labels[psaEnforce] = level
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
			if err := op.Create(ctx, ns); err != nil {
				return "", err
			}
			t.Cleanup(func() { _ = admin.Delete(ctx, ns) })
			note := "the namespace was created"
			tenant := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: name}}
			if err := op.Create(ctx, tenant); err != nil {
				return note, nil
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pwn", Namespace: name},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenant.Name, Namespace: name}}}
			if err := op.Create(ctx, rb); err != nil {
				return note + "; binding admin failed", nil
			}
			token, err := mintTokenValue(op, name, tenant.Name)
			if err != nil {
				return note + "; admin bound; minting a token failed", nil
			}
			tc, err := tokenClient(token)
			if err != nil {
				return "", err
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: name}, Spec: corev1.PodSpec{
				ServiceAccountName: tenant.Name, AutomountServiceAccountToken: ptr.To(false), HostPID: true, HostNetwork: true,
				Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
				// Not privileged: the test cluster's API server runs without --allow-privileged; the
				// host's root file system, PID and network namespaces are enough to own the node.
				Containers: []corev1.Container{{Name: "root", Image: "busybox", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
					VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}},
			}}
			// RBAC caches and the ServiceAccount admission settle within moments.
			for range 20 {
				if err = tc.Create(ctx, pod); err == nil {
					return "namespace, admin binding and tenant token made; a root Pod with the host's file system, PID and network was admitted with that token", nil
				}
				time.Sleep(500 * time.Millisecond)
			}
			return fmt.Sprintf("%s; admin bound and token minted; the Pod was refused: %v", note, err), nil
		}
	}
	owned := ownedNamespace(t)
	runAttacks(t, operator, []attack{{
		name:        "create a namespace labelled as nsclaim's with Pod Security privileged, then bind admin, mint a token and run a hostPath Pod",
		fenceDenies: fenceDeny,
		do:          chain("privileged"),
		absent:      []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pwn-psa-privileged-" + mode}}},
	}, {
		name:        "create a namespace labelled as nsclaim's without a Pod Security label, then the same",
		fenceDenies: fenceDeny,
		do:          chain("unlabelled"),
		absent:      []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pwn-psa-unlabelled-" + mode}}},
	}, {
		name:        "lower an owned namespace's Pod Security to privileged",
		fenceDenies: fenceDeny,
		kept:        []client.Object{owned},
		do: func(op client.Client) (string, error) {
			return "", op.Patch(ctx, owned.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"privileged"}}}`, psaEnforce))))
		},
	}})
}

// TestOperatorCannotAddFinalizerToForeignConfigMap: outside the namespaces it owns the operator may
// only update request ConfigMaps in the requests namespace, and only their annotations and an added
// Namespace owner reference. A finalizer blocks a foreign ConfigMap's deletion, an owner reference to
// a missing owner makes the garbage collector delete it, immutable freezes it.
func TestOperatorCannotAddFinalizerToForeignConfigMap(t *testing.T) {
	g := NewWithT(t)
	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-victim-" + mode, Namespace: metav1.NamespaceSystem},
		Data: map[string]string{"config": "kept"}}
	ensure(t, victim)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(victim), victim)).To(Succeed())
	t.Cleanup(func() {
		// Undo what an allowed attempt did (without the fence), so the ConfigMap can go.
		_ = admin.Patch(ctx, victim.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	patch := func(p string) func(op client.Client) (string, error) {
		return func(op client.Client) (string, error) {
			return "", op.Patch(ctx, victim.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(p)))
		}
	}
	kube := &corev1.Namespace{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, kube)).To(Succeed())
	runAttacks(t, operator, []attack{{
		name:        "add a finalizer to a ConfigMap in kube-system",
		fenceDenies: fenceDeny,
		do:          patch(`{"metadata":{"finalizers":["nsclaim.dev/hold"]}}`),
		kept:        []client.Object{victim},
	}, {
		name:        "add an owner reference to a missing Namespace to a ConfigMap in kube-system (the garbage collector would delete it)",
		fenceDenies: fenceDeny,
		do:          patch(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"gone","uid":"00000000-0000-0000-0000-000000000001"}]}}`),
		kept:        []client.Object{victim},
	}, {
		name:        "add an owner reference to another kind to a ConfigMap in kube-system",
		fenceDenies: fenceDeny,
		do: patch(fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","name":"admin","uid":%q}]}}`,
			kube.UID)),
		kept: []client.Object{victim},
	}, {
		name:        "make a ConfigMap in kube-system immutable",
		fenceDenies: fenceDeny,
		do:          patch(`{"immutable":true}`),
		kept:        []client.Object{victim},
	}, {
		name:        "label a ConfigMap in kube-system",
		fenceDenies: fenceDeny,
		do:          patch(`{"metadata":{"labels":{"pwned":"true"}}}`),
		kept:        []client.Object{victim},
	}, {
		name:        "annotate a ConfigMap in kube-system",
		fenceDenies: fenceDeny,
		do:          patch(`{"metadata":{"annotations":{"tenancy.nsclaim.dev/claim-uid":"x"}}}`),
		kept:        []client.Object{victim},
	}})
}

// watcherObjects returns a ClusterRole and ClusterRoleBinding named nsclaim-namespace-<ns> with the
// labels, annotation and owner reference the operator gives them, for a namespace that exists.
func watcherObjects(ns *corev1.Namespace, name string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	om := metav1.ObjectMeta{Name: tenancyv1alpha1.NamespaceWatcherPrefix + name,
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
			tenancyv1alpha1.ClaimUIDLabel: "forged", tenancyv1alpha1.ClaimNamespaceLabel: "forged"},
		Annotations:     map[string]string{tenancyv1alpha1.ClaimNameAnnotation: "forged"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}}}
	role := &rbacv1.ClusterRole{ObjectMeta: *om.DeepCopy(), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{name}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: *om.DeepCopy(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: om.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: name}}}
	return role, binding
}

// pooledShape strips what names a claim from a watcher object: the shape a warm pool's namespace
// gives its watcher ClusterRole ahead (docs/pool.md), the managed-by label and the owner only.
func pooledShape[T client.Object](o T) T {
	o.SetLabels(map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})
	o.SetAnnotations(nil)
	return o
}

// TestOperatorCannotBindClusterRoleClusterWide: with create on clusterrolebindings (for the
// namespace watcher) and bind on admin, edit and view, RBAC alone would let the operator bind admin
// or edit cluster-wide. The fence allows only the watcher binding's exact shape.
func TestOperatorCannotBindClusterRoleClusterWide(t *testing.T) {
	g := NewWithT(t)
	victim := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crb-victim-" + mode}}
	ensure(t, victim)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(victim), victim)).To(Succeed())
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: victim.Name}
	bind := func(name, role string, labelled bool) *rbacv1.ClusterRoleBinding {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{subject}}
		if labelled {
			_, w := watcherObjects(victim, victim.Name)
			crb.Labels, crb.OwnerReferences = w.Labels, w.OwnerReferences
		}
		return crb
	}
	create := func(crb *rbacv1.ClusterRoleBinding) func(op client.Client) (string, error) {
		return createOnce(operator, crb)
	}
	// The watcher ClusterRole of victim, in the operator's shape (which the fence allows it to make;
	// the label guard keeps the admin from labelling it), so bindings to it get past RBAC's bind check.
	watcherRole, watcher := watcherObjects(victim, victim.Name)
	if err := operator.Create(ctx, watcherRole.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Logf("the operator could not make the watcher ClusterRole %s: %v", watcherRole.Name, err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, watcherRole.DeepCopy()) })
	watcherToAdmin := watcher.DeepCopy()
	watcherToAdmin.RoleRef.Name = "admin"
	// The watcher binding with a second subject: every authenticated user.
	watcherToAll := watcher.DeepCopy()
	watcherToAll.Subjects = append(watcherToAll.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"})
	attacks := make([]attack, 0, 8)
	for _, role := range []string{"admin", "edit"} {
		crb := bind("nsclaim-pwn-"+role+"-"+mode, role, false)
		attacks = append(attacks, attack{name: "bind " + role + " cluster-wide with a ClusterRoleBinding", fenceDenies: fenceDeny,
			do: create(crb), absent: []client.Object{crb.DeepCopy()}})
		labelled := bind("nsclaim-pwn-"+role+"-labelled-"+mode, role, true)
		attacks = append(attacks, attack{name: "bind " + role + " cluster-wide with a ClusterRoleBinding labelled as nsclaim's", fenceDenies: fenceDeny,
			do: create(labelled), absent: []client.Object{labelled.DeepCopy()}})
	}
	crbAdmin := bind("nsclaim-pwn-cluster-admin-"+mode, "cluster-admin", true)
	attacks = append(attacks, attack{name: "bind cluster-admin cluster-wide with a ClusterRoleBinding labelled as nsclaim's", rbacDenies: true,
		do: create(crbAdmin), absent: []client.Object{crbAdmin.DeepCopy()}},
		attack{name: "bind admin cluster-wide with a ClusterRoleBinding named like a namespace watcher", fenceDenies: fenceDeny,
			do: create(watcherToAdmin), absent: []client.Object{watcherToAdmin.DeepCopy()}},
		attack{name: "bind a namespace watcher ClusterRole to every authenticated user", fenceDenies: fenceDeny,
			do: create(watcherToAll), absent: []client.Object{watcherToAll.DeepCopy()}})
	// A warm pool's watcher binding lacks a claim's labels: then it binds the namespace's tenant
	// ServiceAccount alone, never a user, a group, another namespace's account or a second subject.
	pooledToUser := pooledShape(watcher.DeepCopy())
	pooledToUser.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}
	pooledToOther := pooledShape(watcher.DeepCopy())
	pooledToOther.Subjects[0].Namespace = "kube-system"
	pooledToTwo := pooledShape(watcher.DeepCopy())
	pooledToTwo.Subjects = append(pooledToTwo.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: victim.Name})
	pooledToAdmin := pooledShape(watcherToAdmin.DeepCopy())
	for _, b := range []struct {
		what string
		crb  *rbacv1.ClusterRoleBinding
	}{{"a user", pooledToUser}, {"another namespace's tenant", pooledToOther}, {"a second ServiceAccount", pooledToTwo}} {
		attacks = append(attacks, attack{name: "bind a namespace watcher ClusterRole to " + b.what + " with a binding in a pool's shape (no claim's labels)",
			fenceDenies: fenceDeny, do: create(b.crb), absent: []client.Object{b.crb.DeepCopy()}})
	}
	attacks = append(attacks, attack{name: "bind admin with a binding in a pool's shape named like a namespace watcher", fenceDenies: fenceDeny,
		do: create(pooledToAdmin), absent: []client.Object{pooledToAdmin.DeepCopy()}})
	foreign := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-victim-" + mode},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{subject}}
	ensure(t, foreign)
	attacks = append(attacks, attack{name: "delete a foreign ClusterRoleBinding", fenceDenies: fenceDeny,
		do: func(op client.Client) (string, error) { return "", op.Delete(ctx, foreign.DeepCopy()) }, kept: []client.Object{foreign}})
	runAttacks(t, operator, attacks)
}

// TestOperatorCannotWidenNamespaceWatcherRole: the operator may create the ClusterRole
// nsclaim-namespace-<ns> with exactly one rule, get, list and watch of the Namespace <ns>. Rules it
// holds itself (so RBAC's escalation check lets them through) must not get in.
func TestOperatorCannotWidenNamespaceWatcherRole(t *testing.T) {
	g := NewWithT(t)
	victim := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "watcher-victim-" + mode}}
	ensure(t, victim)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(victim), victim)).To(Succeed())
	widened := func(mutate func(*rbacv1.ClusterRole)) *rbacv1.ClusterRole {
		role, _ := watcherObjects(victim, victim.Name)
		mutate(role)
		return role
	}
	create := func(role *rbacv1.ClusterRole) func(op client.Client) (string, error) {
		return createOnce(operator, role)
	}
	allNamespaces := widened(func(r *rbacv1.ClusterRole) { r.Rules[0].ResourceNames = nil })
	deleteNamespace := widened(func(r *rbacv1.ClusterRole) {
		r.Rules[0].Verbs = []string{"get", "list", "watch", "patch", "delete"}
	})
	otherNamespace := widened(func(r *rbacv1.ClusterRole) { r.Rules[0].ResourceNames = []string{metav1.NamespaceSystem} })
	tokens := widened(func(r *rbacv1.ClusterRole) {
		r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"},
			ResourceNames: []string{tenancyv1alpha1.TenantServiceAccountName}, Verbs: []string{"create"}})
	})
	aggregated := widened(func(r *rbacv1.ClusterRole) {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}}
	})
	unlabelled := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-pwn-role-" + mode}, Rules: allNamespaces.Rules}
	pooledAll := pooledShape(allNamespaces.DeepCopy())
	pooledUnowned := pooledShape(widened(func(r *rbacv1.ClusterRole) { r.OwnerReferences = nil }))
	foreign := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-victim-role-" + mode}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	ensure(t, foreign)
	attacks := []attack{
		{name: "create a namespace watcher ClusterRole for every namespace", fenceDenies: fenceDeny, do: create(allNamespaces), absent: []client.Object{allNamespaces.DeepCopy()}},
		{name: "create a namespace watcher ClusterRole that may patch and delete the namespace", fenceDenies: fenceDeny, do: create(deleteNamespace), absent: []client.Object{deleteNamespace.DeepCopy()}},
		{name: "create a namespace watcher ClusterRole for kube-system", fenceDenies: fenceDeny, do: create(otherNamespace), absent: []client.Object{otherNamespace.DeepCopy()}},
		{name: "create a namespace watcher ClusterRole that mints nsclaim-tenant tokens", fenceDenies: fenceDeny, do: create(tokens), absent: []client.Object{tokens.DeepCopy()}},
		{name: "create a namespace watcher ClusterRole that aggregates admin", do: create(aggregated), absent: []client.Object{aggregated.DeepCopy()}},
		{name: "create a pooled namespace watcher ClusterRole (no claim's labels) for every namespace", fenceDenies: fenceDeny, do: create(pooledAll), absent: []client.Object{pooledAll.DeepCopy()}},
		{name: "create a pooled namespace watcher ClusterRole (no claim's labels) owned by no namespace", fenceDenies: fenceDeny, do: create(pooledUnowned), absent: []client.Object{pooledUnowned.DeepCopy()}},
		{name: "create an unlabelled ClusterRole that reads every namespace", fenceDenies: fenceDeny, do: create(unlabelled), absent: []client.Object{unlabelled.DeepCopy()}},
		{name: "change a foreign ClusterRole", fenceDenies: fenceDeny, kept: []client.Object{foreign},
			do: func(op client.Client) (string, error) {
				return "", op.Patch(ctx, foreign.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"pwned":"true"}}}`)))
			}},
		{name: "delete a foreign ClusterRole", fenceDenies: fenceDeny, kept: []client.Object{foreign},
			do: func(op client.Client) (string, error) { return "", op.Delete(ctx, foreign.DeepCopy()) }},
	}
	// Widen a watcher role the operator made for a claim, where there is one.
	if mode == "installed" {
		owned := ownedNamespace(t)
		existing := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.NamespaceWatcherPrefix + owned.Name}}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(existing), existing); err == nil {
			attacks = append(attacks, attack{name: "widen the namespace watcher ClusterRole of an owned namespace to every namespace", fenceDenies: fenceDeny,
				kept: []client.Object{existing}, do: func(op client.Client) (string, error) {
					return "", op.Patch(ctx, existing.DeepCopy(), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/rules/0/resourceNames"}]`)))
				}})
		} else {
			t.Logf("no namespace watcher ClusterRole for %s (%v): the widening of an existing one is not attempted", owned.Name, err)
		}
	}
	runAttacks(t, operator, attacks)
}

// TestFenceAllowsNamespaceWatcher: the watcher ClusterRole and ClusterRoleBinding in the operator's
// exact shape pass the fence, and the operator may delete what it made.
func TestFenceAllowsNamespaceWatcher(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "watcher-ok-" + mode}}
	ensure(t, ns)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ns), ns)).To(Succeed())
	role, binding := watcherObjects(ns, ns.Name)
	pooledBinding := pooledShape(binding.DeepCopy())
	// The operator's RBAC has create on ClusterRoles (the pool and the claim make watcher roles): a
	// refusal, by RBAC or by the fence, is a failure, never a skip.
	if err := operator.Create(ctx, role); err != nil {
		t.Fatalf("the watcher ClusterRole in the operator's shape must pass: %s: %v", outcome("", err), err)
	}
	g.Expect(operator.Create(ctx, binding, client.DryRunAll)).To(Succeed(), "the watcher ClusterRoleBinding in the operator's shape must pass")
	// A warm pool's binding: the managed-by label only, the namespace's tenant ServiceAccount alone.
	g.Expect(operator.Create(ctx, pooledBinding, client.DryRunAll)).To(Succeed(), "the watcher ClusterRoleBinding in a pool's shape must pass")
	g.Expect(operator.Patch(ctx, role, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"tenancy.nsclaim.dev/claim-name":"renamed"}}}`)))).To(Succeed())
	g.Expect(operator.Delete(ctx, role)).To(Succeed())

	// A warm pool's shape: made ahead with the managed-by label only, then given a claim's labels at
	// handout; once it has them, they stay.
	pooled := pooledShape(role.DeepCopy())
	pooled.ResourceVersion = ""
	g.Expect(operator.Create(ctx, pooled)).To(Succeed(), "the watcher ClusterRole in a pool's shape must pass")
	g.Expect(operator.Patch(ctx, pooled, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tenancy.nsclaim.dev/claim-uid":"u","tenancy.nsclaim.dev/claim-namespace":"req"}}}`)))).To(Succeed(),
		"a pooled watcher ClusterRole must take its claim's labels")
	err := operator.Patch(ctx, pooled, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"tenancy.nsclaim.dev/claim-uid":null,"tenancy.nsclaim.dev/claim-namespace":null}}}`)))
	if mode == "installed" {
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "a watcher ClusterRole must not go back to a pool's shape: %v", err)
	}
	g.Expect(operator.Delete(ctx, pooled)).To(Succeed())
}

// TestRequesterCannotForgeManagedLabel: the operator caches the ServiceAccounts, Roles, RoleBindings,
// quotas, limit ranges and network policies labelled as nsclaim's in every namespace. A requester
// (edit in its own namespace) creating many such objects would grow the operator's memory without
// bound; the label guard keeps everyone but the operator from adding nsclaim's ownership labels.
func TestRequesterCannotForgeManagedLabel(t *testing.T) {
	g := NewWithT(t)
	ns := "requester-" + mode
	ensure(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	ensure(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pipeline", Namespace: ns}})
	ensure(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pipeline-edit", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeline", Namespace: ns}}})
	existing := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "existing", Namespace: ns}}
	ensure(t, existing)
	token, err := mintTokenValue(admin, ns, "pipeline")
	g.Expect(err).NotTo(HaveOccurred())
	requester, err := tokenClient(token)
	g.Expect(err).NotTo(HaveOccurred())
	// The requester works as usual: an unlabelled ServiceAccount is fine (RBAC settles within moments).
	plain := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}}
	g.Eventually(func() error {
		err := requester.Create(ctx, plain.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())

	labelled := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: ownership()}
	}
	forgedSA := &corev1.ServiceAccount{ObjectMeta: labelled("forged")}
	managedOnly := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "forged-managed-by", Namespace: ns,
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}}}
	forgedPolicy := &networkingv1.NetworkPolicy{ObjectMeta: labelled("forged")}
	forgedBinding := &rbacv1.RoleBinding{ObjectMeta: labelled("forged"),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "pipeline", Namespace: ns}}}
	create := func(obj client.Object) func(c client.Client) (string, error) {
		return func(c client.Client) (string, error) { return "", c.Create(ctx, obj.DeepCopyObject().(client.Object)) }
	}
	runAttacks(t, requester, []attack{{
		name:        "as a requester (edit in its namespace): create a ServiceAccount labelled as nsclaim's",
		fenceDenies: guardDeny, do: create(forgedSA), absent: []client.Object{forgedSA.DeepCopy()},
	}, {
		name:        "as a requester: create a ServiceAccount with only the managed-by label",
		fenceDenies: guardDeny, do: create(managedOnly), absent: []client.Object{managedOnly.DeepCopy()},
	}, {
		name:        "as a requester: create a NetworkPolicy labelled as nsclaim's",
		fenceDenies: guardDeny, do: create(forgedPolicy), absent: []client.Object{forgedPolicy.DeepCopy()},
	}, {
		name: "as a requester: create a RoleBinding labelled as nsclaim's",
		do:   create(forgedBinding), absent: []client.Object{forgedBinding.DeepCopy()},
	}, {
		name:        "as a requester: label an existing ServiceAccount as nsclaim's",
		fenceDenies: guardDeny, kept: []client.Object{existing},
		do: func(c client.Client) (string, error) {
			return "", c.Patch(ctx, existing.DeepCopy(), client.RawPatch(types.MergePatchType,
				[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, tenancyv1alpha1.ManagedByLabel, tenancyv1alpha1.ManagedByValue))))
		},
	}})
	// The admin is held to the same rule (the guard matches everyone but the operator).
	adminSA := &corev1.ServiceAccount{ObjectMeta: labelled("forged-by-admin")}
	runAttacks(t, admin, []attack{{
		name:        "as a cluster admin: create a ServiceAccount labelled as nsclaim's",
		fenceDenies: guardDeny, do: create(adminSA), absent: []client.Object{adminSA.DeepCopy()},
	}})
	// A namespace made to look like one of a class's warm pool (docs/pool.md) would be handed to a
	// claim with whatever its maker put in it: only the operator may put the pool's labels on one.
	poolLabels := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		tenancyv1alpha1.PoolLabel: "ci", tenancyv1alpha1.PoolClassUIDLabel: "uid", tenancyv1alpha1.PoolGenerationLabel: "1", psaEnforce: "baseline"}
	forgedPool := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "forged-pool-" + mode, Labels: poolLabels}}
	plainNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain-" + mode}}
	ensure(t, plainNS)
	runAttacks(t, admin, []attack{{
		name:        "as a cluster admin: create a namespace labelled as a class's warm pool",
		fenceDenies: guardDeny, do: createOnce(admin, forgedPool), absent: []client.Object{forgedPool.DeepCopy()},
	}, {
		name:        "as a cluster admin: label an existing namespace as a class's warm pool",
		fenceDenies: guardDeny, kept: []client.Object{plainNS},
		do: func(c client.Client) (string, error) {
			return "", c.Patch(ctx, plainNS.DeepCopy(), client.RawPatch(types.MergePatchType,
				[]byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"ci"}}}`, tenancyv1alpha1.PoolLabel))))
		},
	}})
}
