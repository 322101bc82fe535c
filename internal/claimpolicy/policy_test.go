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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func class(name string, mut func(*tenancyv1alpha1.NamespaceClass)) tenancyv1alpha1.NamespaceClass {
	c := tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if mut != nil {
		mut(&c)
	}
	return c
}

func asDefault(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Default = true }

func TestResolveClass(t *testing.T) {
	held := func(className string) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{}
		c.Status.ClassName, c.Status.Namespace = className, "ns"
		return c
	}
	named := func(n string) *tenancyv1alpha1.NamespaceClaim {
		c := &tenancyv1alpha1.NamespaceClaim{}
		c.Spec.ClassName = n
		return c
	}
	tests := []struct {
		name    string
		claim   *tenancyv1alpha1.NamespaceClaim
		classes []tenancyv1alpha1.NamespaceClass
		want    string
		reason  string
	}{
		{"named", named("a"), []tenancyv1alpha1.NamespaceClass{class("a", nil), class("b", asDefault)}, "a", ""},
		{"named missing", named("x"), []tenancyv1alpha1.NamespaceClass{class("a", nil)}, "", tenancyv1alpha1.ClassNotFoundReason},
		{"default", &tenancyv1alpha1.NamespaceClaim{}, []tenancyv1alpha1.NamespaceClass{class("a", nil), class("b", asDefault)}, "b", ""},
		{"no default", &tenancyv1alpha1.NamespaceClaim{}, []tenancyv1alpha1.NamespaceClass{class("a", nil)}, "", tenancyv1alpha1.ClassNotFoundReason},
		{"two defaults", &tenancyv1alpha1.NamespaceClaim{}, []tenancyv1alpha1.NamespaceClass{class("a", asDefault), class("b", asDefault)}, "", tenancyv1alpha1.AmbiguousDefaultClassReason},
		{"held keeps its class when a second default appears", held("a"), []tenancyv1alpha1.NamespaceClass{class("a", asDefault), class("b", asDefault)}, "a", ""},
		{"held keeps its class when the default moves", held("a"), []tenancyv1alpha1.NamespaceClass{class("a", nil), class("b", asDefault)}, "a", ""},
		{"held whose class was deleted", held("a"), []tenancyv1alpha1.NamespaceClass{class("b", asDefault)}, "", tenancyv1alpha1.ClassNotFoundReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ref := ResolveClass(tt.claim, tt.classes)
			switch {
			case tt.reason != "":
				if ref == nil || ref.Reason != tt.reason {
					t.Fatalf("got %v, %v; want refusal %s", got, ref, tt.reason)
				}
			case ref != nil || got == nil || got.Name != tt.want:
				t.Fatalf("got %v, %v; want class %s", got, ref, tt.want)
			}
		})
	}
}

func TestCheckPrefix(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	tests := []struct {
		name    string
		class   tenancyv1alpha1.NamespaceClass
		request bool
		refused bool
	}{
		{"prefix", class("c", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Naming.Prefix = "ci-" }), false, false},
		{"no prefix, no selector", class("c", nil), false, true},
		{"no prefix, empty selector", class("c", func(c *tenancyv1alpha1.NamespaceClass) {
			c.Spec.Access.RequesterNamespaceSelector = &metav1.LabelSelector{}
		}), false, true},
		{"no prefix, selector", class("c", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Access.RequesterNamespaceSelector = sel }), false, false},
		{"no prefix, protocol request", class("c", nil), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := CheckPrefix(&tt.class, tt.request)
			if (ref != nil) != tt.refused {
				t.Fatalf("refused = %v, want %v (%v)", ref != nil, tt.refused, ref)
			}
			if ref != nil && (ref.Reason != tenancyv1alpha1.ClassNotAllowedReason || !strings.Contains(ref.Message, "naming.prefix")) {
				t.Fatalf("refusal %v does not name naming.prefix", ref)
			}
		})
	}
}

func TestCheckPodSecurity(t *testing.T) {
	tests := []struct {
		level, minimum tenancyv1alpha1.PodSecurityLevel
		refused        bool
	}{
		{"", "", false},
		{tenancyv1alpha1.PodSecurityPrivileged, "", true},
		{tenancyv1alpha1.PodSecurityPrivileged, tenancyv1alpha1.PodSecurityPrivileged, false},
		{tenancyv1alpha1.PodSecurityBaseline, tenancyv1alpha1.PodSecurityRestricted, true},
		{tenancyv1alpha1.PodSecurityRestricted, tenancyv1alpha1.PodSecurityBaseline, false},
	}
	for _, tt := range tests {
		c := class("c", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.PodSecurity = tt.level })
		ref := CheckPodSecurity(&c, tt.minimum)
		if (ref != nil) != tt.refused {
			t.Errorf("level %q minimum %q: refused = %v, want %v", tt.level, tt.minimum, ref != nil, tt.refused)
		}
		if ref != nil && !strings.Contains(ref.Message, "spec.podSecurity") {
			t.Errorf("refusal does not name spec.podSecurity: %s", ref.Message)
		}
	}
}

func TestClusterRoleFieldsAndNotBindable(t *testing.T) {
	c := class("c", func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.ExtraRoleBindings = []tenancyv1alpha1.ExtraRoleBinding{{Name: "x", ClusterRole: "cluster-admin"}}
	})
	fields := ClusterRoleFields(&c)
	if len(fields) != 2 || fields[0] != (ClusterRoleField{"spec.clusterRole", DefaultClusterRole}) ||
		fields[1] != (ClusterRoleField{"spec.extraRoleBindings[0].clusterRole", "cluster-admin"}) {
		t.Fatalf("fields = %v", fields)
	}
	if NotBindable(&c, nil) != nil {
		t.Error("nothing unbindable refuses")
	}
	ref := NotBindable(&c, fields[1:])
	if ref == nil || ref.Reason != tenancyv1alpha1.ClusterRoleNotBindableReason || !strings.Contains(ref.Message, `spec.extraRoleBindings[0].clusterRole "cluster-admin"`) {
		t.Errorf("refusal = %v", ref)
	}
}

func TestAllowedLabels(t *testing.T) {
	claim := &tenancyv1alpha1.NamespaceClaim{Spec: tenancyv1alpha1.NamespaceClaimSpec{Labels: map[string]string{"branch": "main", "evil": "x"}}}
	c := class("c", func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.AllowedClaimLabels = []string{"branch", "team"} })
	got := AllowedLabels(claim, &c)
	if len(got) != 1 || got["branch"] != "main" {
		t.Errorf("AllowedLabels = %v", got)
	}
}

func TestNamespaceWatcher(t *testing.T) {
	d := Build("ns-a", Owner{Namespace: "r", Name: "c", UID: "u"}, &tenancyv1alpha1.NamespaceClass{}, nil)
	role, binding := d.NamespaceWatcher, d.NamespaceWatcherBinding
	if role.Name != "nsclaim-namespace-ns-a" || binding.Name != role.Name || binding.RoleRef.Name != role.Name {
		t.Fatalf("names: role %s binding %s -> %s", role.Name, binding.Name, binding.RoleRef.Name)
	}
	if len(role.Rules) != 1 || len(role.Rules[0].ResourceNames) != 1 || role.Rules[0].ResourceNames[0] != "ns-a" ||
		strings.Join(role.Rules[0].Verbs, ",") != "get,list,watch" || role.Rules[0].Resources[0] != "namespaces" {
		t.Fatalf("rule = %+v", role.Rules)
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Namespace != "ns-a" || binding.Subjects[0].Name != tenancyv1alpha1.TenantServiceAccountName {
		t.Fatalf("subjects = %+v", binding.Subjects)
	}
	if !MarkedFor(role, Owner{Namespace: "r", Name: "c", UID: "u"}) || !MarkedFor(binding, Owner{Namespace: "r", Name: "c", UID: "u"}) {
		t.Fatal("the watcher role lacks the ownership marks")
	}
}
