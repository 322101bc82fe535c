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

package claimpolicy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

var testOwner = Owner{Namespace: "team-a", Name: "pr-1", UID: "uid-1"}

// TestNamespaceLabelPrecedence: the claim's labels yield to the class's, the class's to the Pod
// Security labels, and everything to the ownership marks and the class label.
func TestNamespaceLabelPrecedence(t *testing.T) {
	tests := []struct {
		name        string
		class       tenancyv1alpha1.NamespaceClass
		claimLabels map[string]string
		want        map[string]string // labels that must have these values
		absent      []string
	}{
		{name: "the claim's label", class: class("ci", nil), claimLabels: map[string]string{"branch": "main"},
			want: map[string]string{"branch": "main"}},
		{name: "the class's label beats the claim's", class: class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Spec.NamespaceLabels = map[string]string{"team": "from-class", "tier": "ci"}
		}), claimLabels: map[string]string{"team": "from-claim", "branch": "main"},
			want: map[string]string{"team": "from-class", "tier": "ci", "branch": "main"}},
		{name: "Pod Security defaults to baseline", class: class("ci", nil),
			want: map[string]string{psaEnforce: "baseline", psaWarn: "baseline", psaAudit: "baseline"}},
		{name: "Pod Security from the class", class: class("ci", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.PodSecurity = tenancyv1alpha1.PodSecurityRestricted }),
			want: map[string]string{psaEnforce: "restricted", psaWarn: "restricted", psaAudit: "restricted"}},
		{name: "Pod Security beats the claim's labels", class: class("ci", nil),
			claimLabels: map[string]string{psaEnforce: "privileged", psaWarn: "privileged", psaAudit: "privileged"},
			want:        map[string]string{psaEnforce: "baseline", psaWarn: "baseline", psaAudit: "baseline"}},
		{name: "Pod Security beats the class's labels", class: class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Spec.PodSecurity = tenancyv1alpha1.PodSecurityRestricted
			c.Spec.NamespaceLabels = map[string]string{psaEnforce: "privileged"}
		}), want: map[string]string{psaEnforce: "restricted"}},
		{name: "ownership marks beat the class and the claim", class: class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Spec.NamespaceLabels = map[string]string{tenancyv1alpha1.ClaimUIDLabel: "forged", tenancyv1alpha1.ManagedByLabel: "someone"}
		}), claimLabels: map[string]string{tenancyv1alpha1.ClaimNamespaceLabel: "team-b", tenancyv1alpha1.ClassLabel: "admin"},
			want: map[string]string{tenancyv1alpha1.ClaimUIDLabel: "uid-1", tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
				tenancyv1alpha1.ClaimNamespaceLabel: "team-a", tenancyv1alpha1.ClassLabel: "ci"}},
		{name: "the class label is a valid label value", class: class("CI.Class", nil),
			want: map[string]string{tenancyv1alpha1.ClassLabel: Label("CI.Class")}},
		{name: "the claim name is no label", class: class("ci", nil), absent: []string{tenancyv1alpha1.ClaimNameAnnotation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Build("ci-pr-1", testOwner, &tt.class, tt.claimLabels)
			got := d.Namespace.Labels
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("label %s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := got[k]; ok {
					t.Errorf("label %s is set", k)
				}
			}
			if !CarriesMarksOf(d.Namespace, testOwner) {
				t.Error("the namespace lacks its ownership marks")
			}
		})
	}
}

func TestNamespaceAnnotationPrecedence(t *testing.T) {
	c := class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.NamespaceAnnotations = map[string]string{"owner": "platform", tenancyv1alpha1.ClaimNameAnnotation: "forged"}
	})
	d := Build("ci-pr-1", testOwner, &c, map[string]string{"branch": "main"})
	a := d.Namespace.Annotations
	if a["owner"] != "platform" || a[tenancyv1alpha1.ClaimNameAnnotation] != "pr-1" || len(a) != 2 {
		t.Errorf("annotations = %v", a)
	}
	if _, ok := a["branch"]; ok {
		t.Error("a claim label became an annotation")
	}
}

// TestBuildDoesNotAliasItsInputs: the desired objects are applied and may be changed by the caller
// (BindCreator does); the class in the cache and the claim's labels must stay as they were.
func TestBuildDoesNotAliasItsInputs(t *testing.T) {
	c := class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.NamespaceLabels = map[string]string{"tier": "ci"}
		c.Spec.NamespaceAnnotations = map[string]string{"owner": "platform"}
		c.Spec.ExtraRoleBindings = []tenancyv1alpha1.ExtraRoleBinding{{Name: "viewers", ClusterRole: "view", Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "auditors"}}}}
		c.Spec.ResourceQuota = &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}
	})
	claimLabels := map[string]string{"branch": "main"}
	d := Build("ci-pr-1", testOwner, &c, claimLabels)
	d.Namespace.Labels["tier"] = "changed"
	d.Namespace.Annotations["owner"] = "changed"
	d.RoleBindings[2].Subjects[0].Name = "changed"
	d.ResourceQuota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("99")
	if len(claimLabels) != 1 || c.Spec.NamespaceLabels["tier"] != "ci" || c.Spec.NamespaceAnnotations["owner"] != "platform" ||
		c.Spec.ExtraRoleBindings[0].Subjects[0].Name != "auditors" {
		t.Errorf("Build shares maps or slices with its inputs: class %+v, claim labels %v", c.Spec, claimLabels)
	}
	if q := c.Spec.ResourceQuota.Hard[corev1.ResourcePods]; q.String() != "10" {
		t.Errorf("the class's quota changed to %s", q.String())
	}
}

// TestOwnerMarksOnEveryObject: every object Build returns carries the ownership marks, so only it is
// changed or deleted on the claim's behalf; another claim's marks do not match.
func TestOwnerMarksOnEveryObject(t *testing.T) {
	c := class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.ExtraRoleBindings = []tenancyv1alpha1.ExtraRoleBinding{{Name: "viewers", ClusterRole: "view"}}
		c.Spec.ResourceQuota = &corev1.ResourceQuotaSpec{}
		c.Spec.LimitRange = &corev1.LimitRangeSpec{}
		c.Spec.NetworkPolicy = tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces
	})
	d := Build("ci-pr-1", testOwner, &c, nil)
	objs := make([]metav1.Object, 0, 7+len(d.RoleBindings))
	objs = append(objs, d.Namespace, d.ServiceAccount, d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher, d.NamespaceWatcherBinding)
	for _, rb := range d.RoleBindings {
		objs = append(objs, rb)
	}
	if len(objs) != 10 {
		t.Fatalf("%d objects, want 10", len(objs))
	}
	others := []Owner{{Namespace: "team-a", Name: "pr-1", UID: "uid-2"}, {Namespace: "team-b", Name: "pr-1", UID: "uid-1"}}
	for _, o := range objs {
		if !MarkedFor(o, testOwner) {
			t.Errorf("%s lacks the ownership labels: %v", o.GetName(), o.GetLabels())
		}
		// Only the namespace names its claim; a child's annotations (none here) are the same for the
		// same child of every claim.
		if o == metav1.Object(d.Namespace) {
			if !CarriesMarksOf(o, testOwner) {
				t.Errorf("the namespace lacks the ownership marks: %v %v", o.GetLabels(), o.GetAnnotations())
			}
			if got, ok := OwnerFromMarks(o); !ok || got != testOwner {
				t.Errorf("the namespace: OwnerFromMarks = %v, %v", got, ok)
			}
			if CarriesMarksOf(o, Owner{Namespace: "team-a", Name: "pr-2", UID: "uid-1"}) {
				t.Error("the namespace is owned by a claim of another name")
			}
		} else if len(o.GetAnnotations()) != 0 {
			t.Errorf("%s carries annotations %v", o.GetName(), o.GetAnnotations())
		}
		for _, other := range others {
			if MarkedFor(o, other) || CarriesMarksOf(o, other) {
				t.Errorf("%s is owned by %v as well", o.GetName(), other)
			}
		}
		if ns := o.GetNamespace(); o != metav1.Object(d.Namespace) && o != metav1.Object(d.NamespaceWatcher) && o != metav1.Object(d.NamespaceWatcherBinding) && ns != "ci-pr-1" {
			t.Errorf("%s is in namespace %q", o.GetName(), ns)
		}
	}
}

func TestOwnerFromMarks(t *testing.T) {
	marked := func(mut func(l, a map[string]string)) metav1.Object {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: OwnershipLabels(testOwner), Annotations: OwnershipAnnotations(testOwner)}}
		mut(ns.Labels, ns.Annotations)
		return ns
	}
	tests := []struct {
		name string
		obj  metav1.Object
		ok   bool
	}{
		{"all marks", marked(func(l, a map[string]string) {}), true},
		{"not managed", marked(func(l, a map[string]string) { delete(l, tenancyv1alpha1.ManagedByLabel) }), false},
		{"managed by someone else", marked(func(l, a map[string]string) { l[tenancyv1alpha1.ManagedByLabel] = "helm" }), false},
		{"no uid", marked(func(l, a map[string]string) { delete(l, tenancyv1alpha1.ClaimUIDLabel) }), false},
		{"no claim namespace", marked(func(l, a map[string]string) { delete(l, tenancyv1alpha1.ClaimNamespaceLabel) }), false},
		{"no claim name", marked(func(l, a map[string]string) { delete(a, tenancyv1alpha1.ClaimNameAnnotation) }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := OwnerFromMarks(tt.obj); ok != tt.ok {
				t.Errorf("OwnerFromMarks ok = %v, want %v", ok, tt.ok)
			}
			if CarriesMarksOf(tt.obj, testOwner) != tt.ok {
				t.Errorf("OwnedBy = %v, want %v", !tt.ok, tt.ok)
			}
		})
	}
}

// TestTenantSubjects: in Token mode the tenant is the namespace's ServiceAccount; in Requester mode it
// is the stamped creator (and its bound groups), with no ServiceAccount at all; unbound, nobody.
func TestTenantSubjects(t *testing.T) {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: tenancyv1alpha1.TenantServiceAccountName, Namespace: "ci-pr-1"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	devs := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}
	requester := func(bindGroups ...string) tenancyv1alpha1.NamespaceClass {
		return class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Spec.ClusterRole = "admin"
			c.Spec.Credentials.Mode = tenancyv1alpha1.CredentialsModeRequester
			c.Spec.Credentials.Requester = &tenancyv1alpha1.RequesterCredentials{AllowedUsernames: []string{"*"}, BindGroups: bindGroups}
		})
	}
	creator := &tenancyv1alpha1.ClaimCreator{Username: "alice", Groups: []string{"devs", "system:authenticated"}}
	tests := []struct {
		name       string
		class      tenancyv1alpha1.NamespaceClass
		mode       string // token, bind, unbind
		subjects   []rbacv1.Subject
		user       string
		groups     int
		sa         bool
		clusterRol string
	}{
		{name: "token mode", class: class("ci", nil), mode: "token", subjects: []rbacv1.Subject{sa},
			user: "system:serviceaccount:ci-pr-1:" + tenancyv1alpha1.TenantServiceAccountName, groups: 3, sa: true, clusterRol: DefaultClusterRole},
		{name: "requester mode, no groups bound", class: requester(), mode: "bind", subjects: []rbacv1.Subject{alice}, user: "alice", groups: 2, clusterRol: "admin"},
		{name: "requester mode, a group bound", class: requester("devs", "system:authenticated"), mode: "bind", subjects: []rbacv1.Subject{alice, devs}, user: "alice", groups: 2, clusterRol: "admin"},
		{name: "requester mode, unbound", class: requester("devs"), mode: "unbind", clusterRol: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Build("ci-pr-1", testOwner, &tt.class, nil)
			switch tt.mode {
			case "bind":
				BindCreator(&d, creator, &tt.class)
			case "unbind":
				Unbind(&d)
			}
			if (d.ServiceAccount != nil) != tt.sa {
				t.Errorf("ServiceAccount desired = %v, want %v", d.ServiceAccount != nil, tt.sa)
			}
			if d.TenantUser != tt.user || len(d.TenantGroups) != tt.groups || d.TenantClusterRole != tt.clusterRol {
				t.Errorf("tenant %q %v %s, want %q, %d groups, %s", d.TenantUser, d.TenantGroups, d.TenantClusterRole, tt.user, tt.groups, tt.clusterRol)
			}
			if d.RoleBindings[0].Name != TenantRoleBindingName || d.RoleBindings[0].RoleRef.Name != tt.clusterRol ||
				d.RoleBindings[1].Name != ReleaseRoleName || d.RoleBindings[1].RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ReleaseClusterRoleName}) {
				t.Fatalf("bindings %s -> %v, %s -> %v", d.RoleBindings[0].Name, d.RoleBindings[0].RoleRef, d.RoleBindings[1].Name, d.RoleBindings[1].RoleRef)
			}
			for _, got := range [][]rbacv1.Subject{d.RoleBindings[0].Subjects, d.RoleBindings[1].Subjects, d.NamespaceWatcherBinding.Subjects} {
				if len(got) != len(tt.subjects) {
					t.Fatalf("subjects %v, want %v", got, tt.subjects)
				}
				for i := range got {
					if got[i] != tt.subjects[i] {
						t.Errorf("subject %d = %v, want %v", i, got[i], tt.subjects[i])
					}
				}
			}
		})
	}
}

func TestOptionalObjects(t *testing.T) {
	d := Build("ci-pr-1", testOwner, &tenancyv1alpha1.NamespaceClass{}, nil)
	if d.ResourceQuota != nil || d.LimitRange != nil || d.NetworkPolicy != nil || len(d.RoleBindings) != 2 {
		t.Errorf("a bare class asks for optional objects: %+v", d)
	}
	c := class("ci", func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.NetworkPolicy = tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces
		c.Spec.ExtraRoleBindings = []tenancyv1alpha1.ExtraRoleBinding{{Name: "b", ClusterRole: "view"}, {Name: "a", ClusterRole: "edit"}}
	})
	d = Build("ci-pr-1", testOwner, &c, nil)
	np := d.NetworkPolicy
	if np == nil || np.Name != NetworkPolicyName || len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 ||
		np.Spec.Ingress[0].From[0].PodSelector == nil || np.Spec.Ingress[0].From[0].NamespaceSelector != nil {
		t.Errorf("network policy = %+v", np)
	}
	if len(d.RoleBindings) != 4 || d.RoleBindings[2].Name != ExtraRoleBindingPrefix+"b" || d.RoleBindings[3].Name != ExtraRoleBindingPrefix+"a" ||
		d.RoleBindings[3].RoleRef.Name != "edit" {
		t.Errorf("extra bindings not in the class's order: %v, %v", d.RoleBindings[2], d.RoleBindings[3])
	}
}

func TestWatchedNamespaceUndoesNamespaceWatcherName(t *testing.T) {
	for _, ns := range []string{"ci-abc", "a", tenancyv1alpha1.NamespaceWatcherPrefix + "x"} {
		if got, ok := WatchedNamespace(NamespaceWatcherName(ns)); !ok || got != ns {
			t.Errorf("WatchedNamespace(NamespaceWatcherName(%q)) = %q, %v", ns, got, ok)
		}
	}
	for _, name := range []string{"", "edit", "nsclaim-something-else"} {
		if got, ok := WatchedNamespace(name); ok {
			t.Errorf("WatchedNamespace(%q) = %q, true; not a watcher's name", name, got)
		}
	}
}
