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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

type extendOptions struct {
	*options
	by, timeout time.Duration
}

func newExtendCommand(o *options) *cobra.Command {
	e := &extendOptions{options: o}
	cmd := &cobra.Command{
		Use:   "extend [NAME] --by DURATION",
		Short: "Move a claim's expiry later",
		Long: `Move a claim's expiry later by raising its spec.ttl (a claim's TTL counts from its creation; the API
has no other way), wait until the operator has accepted it, and print the new expiry.

The class's lifetime.maxTTL bounds the TTL: an extension beyond it is refused (exit 3) and spec.ttl is
set back, so the claim keeps its namespace and its credentials. An expired claim cannot be extended.
An extension is also a heartbeat: it starts the idle clock again (see heartbeat).`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name, err := e.claimName(a)
			if err != nil {
				return err
			}
			return e.run(cmd.Context(), name)
		},
	}
	cmd.Flags().DurationVar(&e.by, "by", 0, "how much later the claim expires (required)")
	cmd.Flags().DurationVar(&e.timeout, "timeout", time.Minute, "how long to wait for the operator")
	return cmd
}

// ttlPatch is a merge patch of spec.ttl (nil removes it), guarded by the resourceVersion read; with a
// non-zero heartbeat it sets the heartbeat annotation too (an extension is activity).
func ttlPatch(resourceVersion string, ttl *metav1.Duration, heartbeat time.Time) ([]byte, error) {
	md := map[string]any{"resourceVersion": resourceVersion}
	if !heartbeat.IsZero() {
		md["annotations"] = map[string]any{tenancyv1alpha1.HeartbeatAnnotation: heartbeatValue(heartbeat)}
	}
	return json.Marshal(map[string]any{"metadata": md, "spec": map[string]any{"ttl": ttl}})
}

func (e *extendOptions) run(ctx context.Context, name string) error {
	s, err := e.session()
	if err != nil {
		return err
	}
	claim, err := s.mustGet(ctx, name)
	if err != nil {
		return err
	}
	if st := cli.Classify(claim); st.Phase == cli.PhaseExpired || st.Phase == cli.PhaseDeleting {
		return &cli.RefusedError{Claim: s.ns + "/" + name, Reason: tenancyv1alpha1.ExpiredReason, Message: fmt.Sprintf("the claim is %s and cannot be extended", st.Phase)}
	}
	var expiresAt time.Time
	if claim.Status.ExpiresAt != nil {
		expiresAt = claim.Status.ExpiresAt.Time
	}
	ttl, err := cli.ExtendedTTL(claim.CreationTimestamp.Time, expiresAt, e.by)
	if err != nil {
		return err
	}
	patch, err := ttlPatch(claim.ResourceVersion, &metav1.Duration{Duration: ttl}, time.Now())
	if err != nil {
		return err
	}
	u, err := s.claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cli.PluginCommand})
	if err != nil {
		return fmt.Errorf("raising spec.ttl of namespaceclaim %s/%s to %s: %w", s.ns, name, ttl, err)
	}
	want := claim.CreationTimestamp.Add(ttl)
	gen := u.GetGeneration()
	var refusal *metav1.Condition
	done, err := s.waitFor(ctx, name, e.timeout, "to accept spec.ttl "+ttl.String(), func(c *tenancyv1alpha1.NamespaceClaim) (bool, error) {
		if c == nil {
			return false, &cli.NotFoundError{What: fmt.Sprintf("namespaceclaim %s/%s (deleted while extending)", s.ns, name)}
		}
		if c.Status.ExpiresAt != nil && c.Status.ExpiresAt.Time.Equal(want) {
			return true, nil
		}
		r := meta.FindStatusCondition(c.Status.Conditions, tenancyv1alpha1.ReadyCondition)
		if r != nil && r.ObservedGeneration >= gen && r.Status == metav1.ConditionFalse && tenancyv1alpha1.IsRefusalReason(r.Reason) {
			refusal = r
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if refusal != nil {
		// Set spec.ttl back, so the claim is served again with its former expiry.
		back, err := ttlPatch(done.ResourceVersion, claim.Spec.TTL, time.Time{})
		if err == nil {
			_, err = s.claims.Patch(ctx, name, types.MergePatchType, back, metav1.PatchOptions{FieldManager: cli.PluginCommand})
		}
		if err != nil {
			e.logf("setting spec.ttl of namespaceclaim %s/%s back failed: %v", s.ns, name, err)
		}
		return &cli.RefusedError{Claim: s.ns + "/" + name, Reason: refusal.Reason, Message: refusal.Message + " (spec.ttl was set back)"}
	}
	e.logf("namespaceclaim %s/%s expires %s (was %s)", s.ns, name, want.UTC().Format(time.RFC3339), expiresAt.UTC().Format(time.RFC3339))
	_, err = fmt.Fprintln(e.out, want.UTC().Format(time.RFC3339))
	return err
}
