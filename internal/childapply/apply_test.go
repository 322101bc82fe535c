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

package childapply

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

var (
	saGVK    = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	rbGVK    = rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	quotaGVK = corev1.SchemeGroupVersion.WithKind("ResourceQuota")
)

func mustApplyConfiguration(t *testing.T, o client.Object, gvk schema.GroupVersionKind) map[string]any {
	t.Helper()
	u, err := ApplyConfiguration(o, gvk, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// observed is o as the API server would return it after an apply of want: want's fields, the digest
// annotation, and whatever edit adds.
func observed(t *testing.T, want client.Object, gvk schema.GroupVersionKind, edit func(client.Object)) map[string]any {
	t.Helper()
	o := want.DeepCopyObject().(client.Object)
	o.SetAnnotations(map[string]string{})
	for k, v := range mustApplyConfiguration(t, want, gvk)["metadata"].(map[string]any)["annotations"].(map[string]any) {
		o.GetAnnotations()[k] = v.(string)
	}
	o.SetUID("uid-1")
	o.SetResourceVersion("7")
	o.SetCreationTimestamp(metav1.Now())
	if edit != nil {
		edit(o)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestChildAction(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "t1", UID: "ns-uid"}
	sa := &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: map[string]string{"a": "1"}, OwnerReferences: []metav1.OwnerReference{owner}},
		AutomountServiceAccountToken: ptr.To(false),
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "t1", Labels: map[string]string{"a": "1"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nsclaim-tenant", Namespace: "t1"}},
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "t1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
	}
	// A quota as built before the class dropped the services key: same name, another digest.
	oldQuota := quota.DeepCopy()
	oldQuota.Spec.Hard[corev1.ResourceServices] = resource.MustParse("5")

	for name, tc := range map[string]struct {
		want    client.Object
		gvk     schema.GroupVersionKind
		current map[string]any
		expect  childDecision
	}{
		"missing":                     {sa, saGVK, nil, childApply},
		"as applied":                  {sa, saGVK, observed(t, sa, saGVK, nil), childUpToDate},
		"someone added a label":       {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.GetLabels()["team"] = "x" }), childUpToDate},
		"someone added an annotation": {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.GetAnnotations()["note"] = "x" }), childUpToDate},
		"someone added an owner": {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) {
			o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{UID: "other"}))
		}), childUpToDate},
		"our label removed":            {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { delete(o.GetLabels(), "a") }), childApply},
		"our label changed":            {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.GetLabels()["a"] = "2" }), childApply},
		"our owner removed":            {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.SetOwnerReferences(nil) }), childApply},
		"field we set changed":         {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.(*corev1.ServiceAccount).AutomountServiceAccountToken = ptr.To(true) }), childApply},
		"field we set removed":         {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.(*corev1.ServiceAccount).AutomountServiceAccountToken = nil }), childApply},
		"field only others set":        {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { o.(*corev1.ServiceAccount).Secrets = []corev1.ObjectReference{{Name: "s"}} }), childUpToDate},
		"made by an older build":       {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { delete(o.GetAnnotations(), claimpolicy.AppliedAnnotation) }), childApply},
		"binding as applied":           {rb, rbGVK, observed(t, rb, rbGVK, nil), childUpToDate},
		"binding with defaulted group": {rb, rbGVK, observed(t, rb, rbGVK, func(o client.Object) { o.(*rbacv1.RoleBinding).Subjects[0].APIGroup = "" }), childUpToDate},
		"binding with extra subject": {rb, rbGVK, observed(t, rb, rbGVK, func(o client.Object) {
			b := o.(*rbacv1.RoleBinding)
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})
		}), childApply},
		"binding with other subject": {rb, rbGVK, observed(t, rb, rbGVK, func(o client.Object) { o.(*rbacv1.RoleBinding).Subjects[0].Name = "x" }), childApply},
		"binding to another role":    {rb, rbGVK, observed(t, rb, rbGVK, func(o client.Object) { o.(*rbacv1.RoleBinding).RoleRef.Name = "admin" }), childReplace},
		"binding to a Role":          {rb, rbGVK, observed(t, rb, rbGVK, func(o client.Object) { o.(*rbacv1.RoleBinding).RoleRef.Kind = "Role" }), childReplace},
		"quota as applied": {quota, quotaGVK, observed(t, quota, quotaGVK, func(o client.Object) {
			o.(*corev1.ResourceQuota).Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}
		}), childUpToDate},
		"quota value changed": {quota, quotaGVK, observed(t, quota, quotaGVK, func(o client.Object) {
			o.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourcePods] = resource.MustParse("1000")
		}), childApply},
		"quota key the class dropped": {quota, quotaGVK, observed(t, oldQuota, quotaGVK, nil), childApply},
	} {
		t.Run(name, func(t *testing.T) {
			if got := childAction(mustApplyConfiguration(t, tc.want, tc.gvk), tc.current); got != tc.expect {
				t.Errorf("childAction = %d, want %d", got, tc.expect)
			}
		})
	}
}

// TestDigestOnly: an apply that only moves the digest, or drops a map key the class no longer sets, is
// told apart from one that changes a field nsclaim sets (such an apply is no repair).
func TestDigestOnly(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: map[string]string{"a": "1"}},
		AutomountServiceAccountToken: ptr.To(false)}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "t1", Labels: map[string]string{"a": "1"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nsclaim-tenant", Namespace: "t1"}, {Kind: rbacv1.UserKind, Name: "u"}},
	}
	hard := func(keys ...corev1.ResourceName) *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "t1"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
		for _, k := range keys {
			q.Spec.Hard[k] = resource.MustParse("1")
		}
		return q
	}
	oneSubject := rb.DeepCopy()
	oneSubject.Subjects = oneSubject.Subjects[:1]
	otherDigest := func(o client.Object) { o.GetAnnotations()[claimpolicy.AppliedAnnotation] = "000000000000000000000000" }
	for name, tc := range map[string]struct {
		want    client.Object
		gvk     schema.GroupVersionKind
		current map[string]any
		only    bool
	}{
		"missing":                    {sa, saGVK, nil, false},
		"another digest":             {sa, saGVK, observed(t, sa, saGVK, otherDigest), true},
		"no digest (an older build)": {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { delete(o.GetAnnotations(), claimpolicy.AppliedAnnotation) }), true},
		"a field nsclaim sets changed too": {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) {
			otherDigest(o)
			o.(*corev1.ServiceAccount).AutomountServiceAccountToken = ptr.To(true)
		}), false},
		"an ownership label changed too": {sa, saGVK, observed(t, sa, saGVK, func(o client.Object) { otherDigest(o); o.GetLabels()["a"] = "2" }), false},
		"a quota key the class dropped":  {hard(corev1.ResourcePods), quotaGVK, observed(t, hard(corev1.ResourcePods, corev1.ResourceSecrets), quotaGVK, otherDigest), true},
		"a subject the class dropped":    {oneSubject, rbGVK, observed(t, rb, rbGVK, otherDigest), false},
		"a subject someone else added":   {rb, rbGVK, observed(t, oneSubject, rbGVK, otherDigest), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := digestOnly(mustApplyConfiguration(t, tc.want, tc.gvk), tc.current); got != tc.only {
				t.Errorf("digestOnly = %v, want %v", got, tc.only)
			}
		})
	}
}

func TestApplyConfiguration(t *testing.T) {
	sa := &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "t1", Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"},
			ResourceVersion: "5", UID: "u"},
		AutomountServiceAccountToken: ptr.To(false),
	}
	u := mustApplyConfiguration(t, sa, saGVK)
	md := u["metadata"].(map[string]any)
	for _, tc := range []struct {
		what      string
		got, want any
	}{
		{"apiVersion", u["apiVersion"], "v1"},
		{"kind", u["kind"], "ServiceAccount"},
		{"an explicit false", u["automountServiceAccountToken"], false},
		{"name", md["name"], "nsclaim-tenant"},
		{"label", md["labels"], map[string]any{"a": "1"}},
		{"annotation", md["annotations"].(map[string]any)["b"], "2"},
		{"no creationTimestamp", md["creationTimestamp"], nil},
		{"no resourceVersion", md["resourceVersion"], nil},
		{"no status", u["status"], nil},
		{"no empty field", u["secrets"], nil},
	} {
		if !covers(tc.got, tc.want) || (tc.want == nil && tc.got != nil) {
			t.Errorf("%s: got %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	q := mustApplyConfiguration(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "t1"}}, quotaGVK)
	if _, ok := q["status"]; ok {
		t.Errorf("a quota's apply configuration carries its status: %v", q)
	}

	// The digest changes with any field nsclaim sets, and with nothing else.
	digest := func(o client.Object) any {
		return mustApplyConfiguration(t, o, saGVK)["metadata"].(map[string]any)["annotations"].(map[string]any)[claimpolicy.AppliedAnnotation]
	}
	same := sa.DeepCopy()
	same.ResourceVersion, same.UID = "9", "x"
	other := sa.DeepCopy()
	other.AutomountServiceAccountToken = ptr.To(true)
	relabelled := sa.DeepCopy()
	relabelled.Labels["a"] = "3"
	for _, tc := range []struct {
		what  string
		o     client.Object
		equal bool
	}{
		{"same fields", same, true},
		{"another field value", other, false},
		{"another label", relabelled, false},
	} {
		if got := digest(tc.o) == digest(sa); got != tc.equal {
			t.Errorf("%s: digests equal = %v, want %v", tc.what, got, tc.equal)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have, want any
		expect     bool
	}{
		{"equal scalars", "a", "a", true},
		{"different scalars", "a", "b", false},
		{"int64s", int64(3), int64(3), true},
		{"missing value", nil, "a", false},
		{"map subset", map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		{"map missing key", map[string]any{"b": "2"}, map[string]any{"a": "1"}, false},
		{"empty map wanted", map[string]any{}, map[string]any{}, true},
		{"empty map wanted, absent", nil, map[string]any{}, false},
		{"map wanted, list found", []any{}, map[string]any{}, false},
		{"list same", []any{"a", "b"}, []any{"a", "b"}, true},
		{"list order", []any{"b", "a"}, []any{"a", "b"}, false},
		{"list longer", []any{"a", "b"}, []any{"a"}, false},
		{"list elements cover", []any{map[string]any{"k": "v", "d": "x"}}, []any{map[string]any{"k": "v"}}, true},
		{"false is not absent", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := covers(tc.have, tc.want); got != tc.expect {
				t.Errorf("covers(%v, %v) = %v, want %v", tc.have, tc.want, got, tc.expect)
			}
		})
	}
}

// TestDigestLeavesOutTheClaimsIdentity: the same child of two claims of a class carries the same
// digest (so the cache shares its annotation map), while for one claim the digest still changes with
// every field the class changes, and the left-out values cannot be confused with text that looks like
// their tokens.
func TestDigestLeavesOutTheClaimsIdentity(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	class := func(pods string) *tenancyv1alpha1.NamespaceClass {
		return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "ci"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
			ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}},
			LimitRange:    &corev1.LimitRangeSpec{},
			NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces,
		}}
	}
	type claim struct {
		ns, nsUID string
		owner     claimpolicy.Owner
	}
	digests := func(c claim, class *tenancyv1alpha1.NamespaceClass) map[string]any {
		d := claimpolicy.Build(c.ns, c.owner, class, nil)
		ref := claimpolicy.NamespaceOwnerRef(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns, UID: types.UID(c.nsUID)}})
		d.NamespaceWatcher.OwnerReferences = []metav1.OwnerReference{ref}
		d.NamespaceWatcherBinding.OwnerReferences = []metav1.OwnerReference{ref}
		objs := make([]client.Object, 0, 6+len(d.RoleBindings))
		objs = append(objs, d.ServiceAccount, d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher, d.NamespaceWatcherBinding)
		for _, rb := range d.RoleBindings {
			objs = append(objs, rb)
		}
		id := Identity(c.ns, c.nsUID, c.owner.UID, c.owner.Namespace)
		out := map[string]any{}
		for _, o := range objs {
			gvk, err := apiutil.GVKForObject(o, scheme)
			if err != nil {
				t.Fatal(err)
			}
			u, err := ApplyConfiguration(o, gvk, id)
			if err != nil {
				t.Fatal(err)
			}
			// The watchers' names hold the namespace's: key them by kind and position instead.
			out[fmt.Sprintf("%s %d", gvk.Kind, len(out))] = u["metadata"].(map[string]any)["annotations"].(map[string]any)[claimpolicy.AppliedAnnotation]
		}
		return out
	}
	a := claim{"ci-pr-1", "0b6f7c1e-1111-4a20-b12c-81fd1dc892b0", claimpolicy.Owner{Namespace: "team-a", Name: "pr-1", UID: "4e92241a-b8f7-4a20-b12c-81fd1dc892b0"}}
	b := claim{"web-main-77", "9d0e1f2a-2222-4b31-a23d-92ae2ed9a3c1", claimpolicy.Owner{Namespace: "team-b", Name: "main", UID: "5fa3352b-c9a8-4b31-a23d-92ae2ed9a3c1"}}
	da, db := digests(a, class("10")), digests(b, class("10"))
	if len(da) != 8 || !maps.Equal(da, db) {
		t.Errorf("the same children of two claims of a class: digests differ:\n%v\n%v", da, db)
	}
	changed := digests(a, class("11"))
	for k, v := range da {
		if quota := strings.HasPrefix(k, "ResourceQuota"); (changed[k] != v) != quota {
			t.Errorf("%s: digest changed = %v after the class changed the quota only", k, changed[k] != v)
		}
	}

	// For one claim, texts that differ give digests that differ, even where the text looks like the
	// tokens the identity becomes.
	id := Identity("ci-pr-1", "team-a")
	digest := func(v string) any {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nsclaim-tenant", Namespace: "ci-pr-1", Labels: map[string]string{"x": v}}}
		u, err := ApplyConfiguration(sa, saGVK, id)
		if err != nil {
			t.Fatal(err)
		}
		return u["metadata"].(map[string]any)["annotations"].(map[string]any)[claimpolicy.AppliedAnnotation]
	}
	for _, pair := range [][2]string{{"ci-pr-1", "${1}"}, {"team-a", "${2}"}, {"$", "$$"}, {"${1}", "$${1}"}, {"ci-pr-1", "team-a"}} {
		if digest(pair[0]) == digest(pair[1]) {
			t.Errorf("%q and %q give the same digest", pair[0], pair[1])
		}
	}
}
