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

// Package usability holds the claim reconciler's usable phase (Phase.Reconcile over Claim, the part of a
// reconcile it reads and records): whether the claim's namespace is usable yet (internal/usable's
// Checker), and how long a claim provisioned for the first time keeps quiet while it is not.
package usability

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/claimstatus"
)

// Checker tells what a namespace still waits for before it is usable (usable.Checker), and whether no
// watch reports the change it waits for.
type Checker interface {
	Pending(ctx context.Context, namespace string, quota *corev1.ResourceQuota) (pending string, poll bool, err error)
}

// Claim is the part of a claim's reconcile the usable phase reads and writes.
type Claim struct {
	Claim *tenancyv1alpha1.NamespaceClaim
	Now   time.Time
	// Desired is what the namespace and its objects should be; Namespace the observed namespace.
	Desired   *claimpolicy.Desired
	Namespace *corev1.Namespace
	// GrantsAt is when the grants of a reused namespace name may be given; Repaired counts the objects
	// created or changed in this reconcile.
	GrantsAt time.Time
	Repaired int

	// Unusable says what the namespace still waits for; UnusablePoll is set when no watch reports it.
	Unusable     string
	UnusablePoll bool
	// QuietUntil is until when a claim provisioned for the first time keeps its status unwritten.
	QuietUntil time.Time
}

// Phase is the usable phase over its check and its quiet windows.
type Phase struct {
	Checker Checker
	// PendingQuiet is how long a new claim keeps quiet while its namespace is not usable yet;
	// ReuseQuiet while the grants of a reused namespace name are held back.
	PendingQuiet time.Duration
	ReuseQuiet   time.Duration
}

// Reconcile records whether the namespace is usable yet, in s.Unusable: not while its name,
// in use moments ago, holds back its grants (see watchcache.NamespaceReuse: no binding names its tenant
// yet, so no token, no self-test and no Ready until the previous holder's token cannot authenticate),
// nor until checkUsable finds it usable. A namespace not usable yet keeps a claim provisioned for the
// first time quiet for a moment (QuietUntil: ReuseQuiet for the grants, PendingQuiet for the rest).
func (r *Phase) Reconcile(ctx context.Context, s *Claim) error {
	quiet := r.PendingQuiet
	if s.GrantsAt.After(s.Now) {
		s.Unusable = grantsWaitMessage(s.Desired.Namespace.Name, s.GrantsAt)
		quiet = r.ReuseQuiet
	} else if err := r.checkUsable(ctx, s); err != nil {
		return err
	}
	if s.Unusable != "" && s.Namespace != nil {
		s.QuietUntil = claimstatus.QuietUntil(&s.Claim.Status, s.Namespace.CreationTimestamp.Time, quiet)
	}
	return nil
}

// checkUsable records in s.Unusable why the namespace is not usable yet (the Checker: the class's
// ResourceQuota is in force and the `default` ServiceAccount exists), so that Ready means usable, and in
// s.UnusablePoll whether no watch reports the change it waits for. A claim Ready for its generation in
// a reconcile that changed nothing asks nothing (the namespace was usable and nothing was replaced).
func (r *Phase) checkUsable(ctx context.Context, s *Claim) error {
	if s.Repaired == 0 && claimstatus.ReadyFor(s.Claim) {
		return nil
	}
	pending, poll, err := r.Checker.Pending(ctx, s.Desired.Namespace.Name, s.Desired.ResourceQuota)
	if err != nil {
		return err
	}
	s.Unusable, s.UnusablePoll = pending, poll
	return nil
}

// grantsWaitMessage says why a namespace's tenant gets no access yet.
func grantsWaitMessage(namespace string, at time.Time) string {
	return fmt.Sprintf("Waiting until %s to grant access to namespace %s: a namespace of that name may have been in use moments ago "+
		"(or the operator started moments ago and cannot know), and until then the API server may still accept a previous holder's token",
		at.UTC().Format(time.RFC3339), namespace)
}
