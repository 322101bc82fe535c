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

package sleeper

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/lifecycle"
)

// workloads is what the sleep phase read in a namespace: the lifecycle view, and each object's
// resourceVersion by kind and name, for the writes' optimistic lock.
type workloads struct {
	observed []lifecycle.Observed
	versions map[string]string
	cronJobs map[string]*batchv1.CronJob
}

func workloadKey(kind tenancyv1alpha1.WorkloadKind, name string) string {
	return string(kind) + "/" + name
}

// observe reads the Deployments, StatefulSets (metadata, then each one's scale) and CronJobs
// of namespace ns from the API server (no cache: the operator keeps no informer on them).
func (s Sleeper) observe(ctx context.Context, ns string) (*workloads, error) {
	w := &workloads{versions: map[string]string{}, cronJobs: map[string]*batchv1.CronJob{}}
	for _, kind := range []tenancyv1alpha1.WorkloadKind{tenancyv1alpha1.WorkloadDeployment, tenancyv1alpha1.WorkloadStatefulSet} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(string(kind) + "List"))
		if err := s.APIReader.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing %ss in %s: %w", kind, ns, err)
		}
		for i := range list.Items {
			m := &list.Items[i]
			if !m.DeletionTimestamp.IsZero() {
				continue
			}
			scale, generation, err := s.readScale(ctx, kind, m)
			if err != nil {
				return nil, err
			}
			if scale == nil {
				continue
			}
			w.observed = append(w.observed, lifecycle.Observed{Kind: kind, Name: m.Name, UID: string(scale.UID), Replicas: scale.Spec.Replicas, Generation: generation})
			w.versions[workloadKey(kind, m.Name)] = scale.ResourceVersion
		}
	}
	cronJobs := &batchv1.CronJobList{}
	if err := s.APIReader.List(ctx, cronJobs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing CronJobs in %s: %w", ns, err)
	}
	for i := range cronJobs.Items {
		c := &cronJobs.Items[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		w.observed = append(w.observed, lifecycle.Observed{Kind: tenancyv1alpha1.WorkloadCronJob, Name: c.Name, UID: string(c.UID),
			Suspended: c.Spec.Suspend != nil && *c.Spec.Suspend, Generation: c.Generation})
		w.cronJobs[c.Name] = c
	}
	return w, nil
}

// readScale reads the scale of the Deployment or StatefulSet m (listed metadata only) and the object's
// generation at the same resourceVersion, re-reading the metadata when a write came between the two
// reads (a Deployment controller's status write, say). The generation is 0 when they never agree in
// three tries: the object is then neither held nor restored in this reconcile (lifecycle.Hold,
// lifecycle.Restore). scale is nil when the object is gone.
func (s Sleeper) readScale(ctx context.Context, kind tenancyv1alpha1.WorkloadKind, m *metav1.PartialObjectMetadata) (*autoscalingv1.Scale, int64, error) {
	for try := 0; ; try++ {
		scale := &autoscalingv1.Scale{}
		if err := s.Client.SubResource("scale").Get(ctx, scalable(kind, m.Namespace, m.Name), scale); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, nil
			}
			return nil, 0, fmt.Errorf("reading the scale of %s %s: %w", kind, klog.KObj(m), err)
		}
		if scale.ResourceVersion == m.ResourceVersion && scale.UID == m.UID {
			return scale, m.Generation, nil
		}
		if try == 2 {
			return scale, 0, nil
		}
		fresh := &metav1.PartialObjectMetadata{}
		fresh.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(string(kind)))
		if err := s.APIReader.Get(ctx, client.ObjectKeyFromObject(m), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, nil
			}
			return nil, 0, fmt.Errorf("reading %s %s: %w", kind, klog.KObj(m), err)
		}
		m = fresh
	}
}

// scalable is an empty Deployment or StatefulSet named for a scale subresource request.
func scalable(kind tenancyv1alpha1.WorkloadKind, ns, name string) client.Object {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	if kind == tenancyv1alpha1.WorkloadStatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta}
	}
	return &appsv1.Deployment{ObjectMeta: meta}
}

// apply makes the writes of a sleep (replicas 0, suspend true), a hold or a wake in namespace ns. Each
// write names the object's UID and the resourceVersion read, so an object replaced or changed since is
// never written (Conflict; the next reconcile looks again). It returns the writes made, each with the
// object's generation right after it (lifecycle.Wrote records them), also when a later write failed.
func (s Sleeper) apply(ctx context.Context, ns string, w *workloads, steps []lifecycle.Step) ([]lifecycle.Step, error) {
	var written []lifecycle.Step
	for _, st := range steps {
		if st.Kind == tenancyv1alpha1.WorkloadCronJob {
			cur := w.cronJobs[st.Name]
			if cur == nil || string(cur.UID) != st.UID {
				continue
			}
			patch := client.MergeFromWithOptions(cur.DeepCopy(), client.MergeFromWithOptimisticLock{})
			suspend := st.Suspend
			cur.Spec.Suspend = &suspend
			if err := s.Client.Patch(ctx, cur, patch, client.FieldOwner(kube.FieldOwner)); err != nil {
				return written, fmt.Errorf("setting suspend of CronJob %s to %t: %w", klog.KObj(cur), suspend, err)
			}
			// The patch returns the CronJob as written: its generation is the one this write left.
			st.Generation = cur.Generation
			written = append(written, st)
			continue
		}
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: st.Name, UID: types.UID(st.UID),
			ResourceVersion: w.versions[workloadKey(st.Kind, st.Name)]}, Spec: autoscalingv1.ScaleSpec{Replicas: st.Replicas}}
		if err := s.Client.SubResource("scale").Update(ctx, scalable(st.Kind, ns, st.Name), client.WithSubResourceBody(scale), client.FieldOwner(kube.FieldOwner)); err != nil {
			return written, fmt.Errorf("scaling %s %s/%s to %d: %w", st.Kind, ns, st.Name, st.Replicas, err)
		}
		// The scale carries no generation. The write was conditional on the resourceVersion at which
		// st.Generation was read and changed spec.replicas, so the API server made it st.Generation+1.
		if st.Generation != 0 {
			st.Generation++
		}
		written = append(written, st)
	}
	return written, nil
}
