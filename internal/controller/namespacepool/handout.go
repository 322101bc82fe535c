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

package namespacepool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/usable"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts;pods,verbs=list
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=list

// Handout hands the namespaces a PoolReconciler made to claims: the claim reconciler's one way into
// the pool (its Pool).
type Handout struct {
	// Client lists the pool from the cache and writes the handout's patch.
	Client client.Client
	// APIReader reads what a pooled namespace holds (takeVerified), and its `default` ServiceAccount
	// when DefaultServiceAccounts is nil.
	APIReader client.Reader
	// Recorder emits the Warning Event of a discarded pooled namespace, on its class.
	Recorder recorder.EventRecorder
	// DefaultServiceAccounts reports each namespace's `default` ServiceAccount; nil reads it from the
	// API server.
	DefaultServiceAccounts *watchcache.DefaultServiceAccounts
	// NameReuse holds back a namespace whose name was in use moments ago (see
	// watchcache.NamespaceReuse); nil holds back none.
	NameReuse *watchcache.NamespaceReuse
	// Bindings finds bindings nsclaim did not make that name a pooled namespace's tenant ahead of any
	// claim; nil skips that check.
	Bindings *watchcache.BindingIndex
	// Ownership proves that a pooled namespace is the pool's (its record) before it is handed out, and
	// writes the claim's record with the handout.
	Ownership *ownership.Verifier
}

// HandOut takes one ready namespace of class's pool for the claim owner, or returns nil when there is
// none: a pooled namespace (claimpolicy.IsPooled) of the class as it is now (claimpolicy.PoolCurrent),
// not terminating, whose grants may be made at once (watchcache.NamespaceReuse, as of now), that is
// usable (the quota's status computed, the `default` ServiceAccount made), proven the pool's by its
// record and holding only what the pool made (takeVerified, beside the take). It is taken by a merge patch of its labels
// conditional on the resourceVersion it was read at (claimpolicy.HandoutPatch), which writes the
// claim's ownership record too: if another claim took it, or the pool drained it, the API server
// answers Conflict and the next one is tried. Candidates are tried from a random start, so workers
// handing out at once rarely collide. The namespace is returned as the patch returned it.
func (h *Handout) HandOut(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, owner claimpolicy.Owner, now time.Time) (*corev1.Namespace, error) {
	list := &corev1.NamespaceList{}
	if err := h.Client.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.PoolLabel: claimpolicy.Label(class.Name)}); err != nil {
		return nil, fmt.Errorf("listing the pool of class %s: %w", class.Name, err)
	}
	n := len(list.Items)
	if n == 0 {
		return nil, nil
	}
	// The quota a pooled namespace of the class holds: the same in each but for its namespace.
	quota := claimpolicy.BuildPooled("", class).ResourceQuota
	start := rand.IntN(n)
	for i := range n {
		ns := &list.Items[(start+i)%n]
		ok, err := h.ready(ctx, class, quota, ns, now)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if taken, err := h.takeVerified(ctx, class, ns, owner); err != nil || taken != nil {
			return taken, err
		}
	}
	return nil, nil
}

// takeVerified takes ns for the claim owner while it reads what ns holds (the check pooledTampered judges), both at
// once: the check's reads and the take's patch are each one round trip, and a handout waited for
// both one after the other. Reading beside the patch proves what reading before it did: anything
// planted before the reads start is seen, and what is planted after them was missed by reads before
// the patch as well. When the check finds ns tampered, a namespace the
// patch took is discarded as the patch returned it (it never reaches the claim: the caller has not
// seen it), one the patch did not take is left to whoever took it, whose own check discards it; and
// the next candidate is tried. A namespace taken whose check could not be read is discarded too, and
// the error returned: no namespace is handed out unchecked.
func (h *Handout) takeVerified(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, ns *corev1.Namespace, owner claimpolicy.Owner) (*corev1.Namespace, error) {
	var contents pooledContents
	var readErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		contents, readErr = h.readPooledContents(ctx, ns.Name)
	}()
	taken, takeErr := h.take(ctx, ns, owner)
	<-read
	if takeErr != nil || taken == nil {
		return nil, takeErr
	}
	why := pooledTampered(contents)
	if readErr == nil && why == "" {
		return taken, nil
	}
	if readErr != nil {
		why = "what it holds could not be read at its handout"
	}
	// The patch made it this claim's: whatever changed it since, it goes (its UID alone is the precondition).
	taken.ResourceVersion = ""
	if err := h.discard(ctx, class, taken, why); err != nil {
		return nil, errors.Join(readErr, err)
	}
	return nil, readErr
}

// ready reports whether ns, a namespace of class's pool by its labels, may be handed out now; quota is
// the class's pooled quota in no namespace.
func (h *Handout) ready(ctx context.Context, class *tenancyv1alpha1.NamespaceClass, quota *corev1.ResourceQuota, ns *corev1.Namespace, now time.Time) (bool, error) {
	if !claimpolicy.IsPooled(ns) || !claimpolicy.PoolCurrent(ns, class) || !ns.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if h.NameReuse != nil && h.NameReuse.GrantsAt(ns).After(now) {
		return false, nil
	}
	checker := usable.Checker{Reader: h.Client, APIReader: h.APIReader, ServiceAccounts: h.DefaultServiceAccounts}
	if pending, _, err := checker.Pending(ctx, ns.Name, inNamespace(quota, ns.Name)); err != nil || pending != "" {
		return false, err
	}
	// The pool's labels are an index: only the pool's record proves that nsclaim made this namespace
	// for this class's pool.
	owned, err := h.Ownership.Owns(ctx, ns, ownership.Pool(string(class.UID)))
	if err != nil {
		return false, err
	}
	if !owned {
		h.Ownership.Refused(ctx, ns, nil, monitoring.ActionHandout)
		return false, nil
	}
	return true, nil
}

// take hands ns to the claim owner with the handout's conditional patch; nil when another claim took
// it or the pool drained it first.
func (h *Handout) take(ctx context.Context, ns *corev1.Namespace, owner claimpolicy.Owner) (*corev1.Namespace, error) {
	record := h.Ownership.Key.ForUID(ns.Name, string(ns.UID), ownership.Claim(owner.Namespace, owner.Name, owner.UID))
	body, err := json.Marshal(claimpolicy.HandoutPatch(owner, record, ns.ResourceVersion))
	if err != nil {
		return nil, err
	}
	taken := ns.DeepCopy()
	err = h.Client.Patch(ctx, taken, client.RawPatch(types.MergePatchType, body), client.FieldOwner(kube.FieldOwner))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("handing out pooled namespace %s: %w", ns.Name, err)
	}
	return taken, nil
}

// inNamespace returns a copy of quota (nil: nil) in namespace ns. The copy shares quota's maps: it is
// only read.
func inNamespace(quota *corev1.ResourceQuota, ns string) *corev1.ResourceQuota {
	if quota == nil {
		return nil
	}
	q := *quota
	q.Namespace = ns
	return &q
}
