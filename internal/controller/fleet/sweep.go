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

package fleet

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// sweepEvery is how often the hub looks for orphan mirrors on every member.
const sweepEvery = 20 * time.Second

// Sweeper deletes orphan mirrors: claims on a member that the hub made (its ownership record names that
// member) for a hub claim that is gone, for example one whose finalizer an admin removed. The member's
// operator then releases the namespace as for any deleted claim. It runs on the leader only.
type Sweeper struct {
	// Claims lists the hub claims that find the candidates (the manager's cache: a sweep every 20 s
	// reads no list from the API server); nil lists them through Hub.
	Claims client.Reader
	// Hub reads a candidate's hub claim again, uncached (the manager's API reader): a claim the cache
	// does not show yet is not taken for gone.
	Hub client.Reader
	// Registry gives the members and their clients.
	Registry *Registry
	// MemberNamespace is the requester namespace on every member that holds the hub's mirror claims.
	MemberNamespace string
}

// Start sweeps every sweepEvery until ctx ends (manager.Runnable).
func (s *Sweeper) Start(ctx context.Context) error {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Sweep(ctx)
		}
	}
}

// NeedLeaderElection is true: only the leading hub deletes mirrors.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Sweep looks once at every member that answers; a member that does not is looked at next time.
func (s *Sweeper) Sweep(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName("fleet-sweep")
	secrets, err := s.Registry.Secrets(ctx)
	if err != nil {
		log.Error(err, "Listing the members")
		return
	}
	// One list of the hub's claims finds the candidates; each is read again before its mirror goes (a
	// claim made after the list is not missing, sweepMember).
	var claims tenancyv1alpha1.NamespaceClaimList
	lister := s.Claims
	if lister == nil {
		lister = s.Hub
	}
	// Read-only: the cached claims themselves, no deep copy of each.
	if err := lister.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		log.Error(err, "Listing the hub claims")
		return
	}
	hub := make(map[string]*tenancyv1alpha1.NamespaceClaim, len(claims.Items))
	for i := range claims.Items {
		c := &claims.Items[i]
		hub[c.Namespace+"/"+c.Name] = c
	}
	for i := range secrets {
		if err := s.sweepMember(ctx, secrets[i].Name, hub); err != nil {
			log.Info("Member not swept", "cluster", secrets[i].Name, "reason", err.Error())
		}
	}
}

// sweepMember deletes member's orphan mirrors, given the hub's claims by namespace/name. A candidate's
// hub claim is read again, uncached: a hub claim always exists before its mirror, so one missing now
// (or replaced, another UID) never comes back.
func (s *Sweeper) sweepMember(ctx context.Context, member string, hub map[string]*tenancyv1alpha1.NamespaceClaim) error {
	c, err := s.Registry.Client(ctx, member)
	if err != nil {
		return err
	}
	var mirrors tenancyv1alpha1.NamespaceClaimList
	if err := c.List(ctx, &mirrors, client.InNamespace(s.MemberNamespace), client.MatchingLabelsSelector{Selector: hubClaimSelector}); err != nil {
		return err
	}
	for i := range mirrors.Items {
		m := &mirrors.Items[i]
		if !orphan(m, member, hub[m.Annotations[HubClaimAnnotation]]) {
			continue
		}
		again, err := s.hubClaim(ctx, m.Annotations[HubClaimAnnotation])
		if err != nil {
			return err
		}
		if !orphan(m, member, again) {
			continue
		}
		if err := c.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).WithName("fleet-sweep").Info("Deleted an orphan mirror: its hub claim is gone", "cluster", member, "mirror", klog.KObj(m),
			"hubClaim", m.Annotations[HubClaimAnnotation])
	}
	return nil
}

// orphan says whether mirror, read on member, is a mirror this hub made there whose hub claim (hub,
// nil when gone) is gone or was replaced by another claim of that name. A mirror whose ownership record
// is incomplete, or names another member (another registration of the same cluster), is left alone,
// and so is one being deleted.
func orphan(mirror *tenancyv1alpha1.NamespaceClaim, member string, hub *tenancyv1alpha1.NamespaceClaim) bool {
	uid := mirror.Labels[HubClaimUIDLabel]
	if _, named := HubClaimKey(mirror.Annotations[HubClaimAnnotation]); uid == "" || !mirror.DeletionTimestamp.IsZero() ||
		mirror.Annotations[ClusterAnnotation] != member || !named {
		return false
	}
	return hub == nil || string(hub.UID) != uid
}

// hubClaim reads the hub claim namespace/name uncached, nil when it is gone.
func (s *Sweeper) hubClaim(ctx context.Context, key string) (*tenancyv1alpha1.NamespaceClaim, error) {
	nn, _ := HubClaimKey(key)
	c := &tenancyv1alpha1.NamespaceClaim{}
	err := s.Hub.Get(ctx, nn, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}
