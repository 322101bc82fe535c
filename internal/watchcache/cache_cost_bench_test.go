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

package watchcache

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// BenchmarkCachedObjectCost prints the heap that the cached objects of one Ready claim of the bench's
// class (test/bench) cost the manager: its claim, namespace, children and the namespace's default
// ServiceAccount, each as the API server would send it (managedFields included; protobuf, JSON for
// the claim), decoded, put through the cache transform (compactForCache) and added to a client-go
// store of its kind, with the namespace index only where the manager keeps one. The field and subject
// indexes and the informers' event buffers are not counted. "floor" is the least any cached object
// costs: a PartialObjectMetadata with a name, a namespace, a UID and a resourceVersion in a store
// with no index. Run it with
//
//	go test ./internal/watchcache/ -run '^$' -bench BenchmarkCachedObjectCost -benchtime 5000x
//
// and read the B/claim and B/object columns (docs/benchmarks-history.md, "Memory, round 8").
func BenchmarkCachedObjectCost(b *testing.B) {
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	var protobuf, json apiruntime.Serializer
	for _, info := range codecs.SupportedMediaTypes() {
		switch info.MediaType {
		case apiruntime.ContentTypeProtobuf:
			protobuf = info.Serializer
		case apiruntime.ContentTypeJSON:
			json = info.Serializer
		}
	}
	// All the objects of b.N claims, in one store per kind: the transform's intern tables are shared by
	// all kinds, so a kind measured alone would be credited with strings another kind holds. "claim,
	// namespace and default ServiceAccount" leaves out the children, as a manager that did not cache them
	// would.
	for _, set := range []struct {
		name  string
		kinds []string
	}{
		{"claim", nil},
		{"claim, namespace and default ServiceAccount", []string{"NamespaceClaim", "Namespace", "default ServiceAccount"}},
	} {
		b.Run(set.name, func(b *testing.B) { cacheClaims(b, scheme, protobuf, json, set.kinds) })
	}
	b.Run("floor", func(b *testing.B) {
		before := liveHeap()
		store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
		for i := range b.N {
			if err := store.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "default",
				Namespace: benchNamespace(i), UID: uuid.NewUUID(), ResourceVersion: fmt.Sprint(2_000_000 + i)}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(liveHeap()-before)/float64(b.N), "B/object")
		runtime.KeepAlive(store)
	})
}

// cacheClaims keeps the objects of the given kinds (all when kinds is nil) of b.N claims as the
// manager's caches do and reports the heap they hold, the transform's shared tables (emptied first)
// included.
func cacheClaims(b *testing.B, scheme *apiruntime.Scheme, protobuf, json apiruntime.Serializer, kinds []string) {
	sharedStrings, sharedLabels = newSharedTable[string](sharedLimit), newSharedTable[map[string]string](sharedLimit)
	sharedSpecs = newSharedTable[any](1 << 10)
	type decoded struct {
		codec apiruntime.Serializer
		raw   []byte
		kind  string
	}
	class := costClass()
	wire := make([]decoded, 0, 11*b.N)
	for i := range b.N {
		for kind, objs := range claimObjects(b, scheme, class, i) {
			if kinds != nil && !slices.Contains(kinds, kind) {
				continue
			}
			codec := protobuf
			if kind == "NamespaceClaim" {
				codec = json
			}
			for _, o := range objs {
				raw, err := apiruntime.Encode(codec, o)
				if err != nil {
					b.Fatal(err)
				}
				wire = append(wire, decoded{codec, raw, kind})
			}
		}
	}
	transform := compactForCache()
	before := liveHeap()
	stores := map[string]toolscache.Indexer{}
	for _, w := range wire {
		store, ok := stores[w.kind]
		if !ok {
			indexers := toolscache.Indexers{}
			if w.kind == "NamespaceClaim" || w.kind == "RoleBinding" {
				indexers[toolscache.NamespaceIndex] = toolscache.MetaNamespaceIndexFunc
			}
			store = toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
			stores[w.kind] = store
		}
		obj, _, err := w.codec.Decode(w.raw, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		kept, err := transform(obj)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Add(kept); err != nil {
			b.Fatal(err)
		}
	}
	held := float64(liveHeap() - before)
	b.ReportMetric(held/float64(b.N), "B/claim")
	b.ReportMetric(held/float64(len(wire)), "B/object")
	b.ReportMetric(float64(len(wire))/float64(b.N), "objects/claim")
	// The encoded objects were live at the first reading: they must be at the second.
	runtime.KeepAlive(wire)
	runtime.KeepAlive(stores)
}

// liveHeap returns the bytes of live heap objects after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func benchNamespace(i int) string { return fmt.Sprintf("b-bench-claims-claim-%05d-5dd66e76a7", i) }

// costClass is test/bench's class (benchClass): the edit role, restricted Pod Security, a quota, a
// limit range and the deny-from-other-namespaces network policy.
func costClass() *tenancyv1alpha1.NamespaceClass {
	return &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: "edit", Naming: tenancyv1alpha1.NamingSpec{Prefix: "b-"},
		PodSecurity: tenancyv1alpha1.PodSecurityRestricted, NetworkPolicy: tenancyv1alpha1.NetworkPolicyDenyFromOtherNamespaces,
		ResourceQuota: &corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse("20"), corev1.ResourceRequestsCPU: resource.MustParse("4")}},
		LimitRange: &corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
	}}
}

// claimObjects returns, by kind, the objects of the i-th Ready claim of class as the API server would
// hold them (UIDs, resourceVersions, a managedFields entry, the applied digest on the children).
func claimObjects(b *testing.B, scheme *apiruntime.Scheme, class *tenancyv1alpha1.NamespaceClass, i int) map[string][]apiruntime.Object {
	b.Helper()
	now := metav1.NewTime(time.Now())
	claim := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%05d", i), Namespace: "bench-claims",
		Finalizers: []string{tenancyv1alpha1.ClaimFinalizer}, Generation: 1}}
	claim.UID = uuid.NewUUID()
	ns := benchNamespace(i)
	secret := claim.Name + "-kubeconfig"
	claim.Status = tenancyv1alpha1.NamespaceClaimStatus{ObservedGeneration: 1, ClassName: class.Name, Namespace: ns,
		CredentialsSecretName: secret, ExpiresAt: &now, Phase: tenancyv1alpha1.ClaimPhase("Ready"),
		Conditions: []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ProvisionedReason, ObservedGeneration: 1,
				LastTransitionTime: now, Message: "Namespace " + ns + " is ready; its credentials are in Secret " + secret},
			{Type: "SelfTested", Status: metav1.ConditionTrue, Reason: "Passed", ObservedGeneration: 1, LastTransitionTime: now,
				Message: "The tenant may do what the class grants in " + ns + " and nothing else"},
		}}
	d := claimpolicy.Build(ns, claimpolicy.OwnerOf(claim), class, nil)
	d.Namespace.Labels[corev1.LabelMetadataName] = ns
	d.Namespace.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	d.Namespace.Status.Phase = corev1.NamespaceActive
	out := map[string][]apiruntime.Object{}
	added := 0
	// add gives o what the API server sets and files it under its kind (kind, when not empty).
	add := func(o client.Object, kind string) {
		gvks, _, err := scheme.ObjectKinds(o)
		if err != nil {
			b.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
		if o.GetUID() == "" {
			o.SetUID(uuid.NewUUID())
		}
		o.SetResourceVersion(fmt.Sprint(1_000_000 + 16*i + added))
		added++
		o.SetCreationTimestamp(now)
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "nsclaim", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: gvks[0].GroupVersion().String(), Time: &now, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}}}`)}})
		if kind == "" {
			kind = gvks[0].Kind
		}
		out[kind] = append(out[kind], o)
	}
	add(claim, "")
	add(d.Namespace, "")
	digest := map[string]string{claimpolicy.AppliedAnnotation: "3f2a9c0e5b7d1e4f6a8c0b2d4e6f8a1c"}
	for _, c := range []client.Object{d.ServiceAccount, d.ResourceQuota, d.LimitRange, d.NetworkPolicy, d.NamespaceWatcher, d.NamespaceWatcherBinding} {
		c.SetAnnotations(digest)
		add(c, "")
	}
	for _, rb := range d.RoleBindings {
		rb.SetAnnotations(digest)
		add(rb, "")
	}
	add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}, "default ServiceAccount")
	return out
}
