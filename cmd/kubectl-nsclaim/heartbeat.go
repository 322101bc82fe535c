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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

type heartbeatOptions struct {
	*options
	wait    bool
	timeout time.Duration
	// wake waits, besides, until the namespace no longer sleeps (kubectl nsclaim wake).
	wake bool
}

func newHeartbeatCommand(o *options) *cobra.Command {
	h := &heartbeatOptions{options: o}
	cmd := &cobra.Command{
		Use:   "heartbeat [NAME]",
		Short: "Tell the operator the claim's namespace is in use: its idle clock starts again",
		Long: `Set the claim's heartbeat annotation (` + tenancyv1alpha1.HeartbeatAnnotation + `) to the current time, so the
idle clock of a class with lifetime.idleTTL starts again (docs/lifecycle.md). A job that works in its
namespace without a Pod Pending or Running there (a long test run from the runner) sends one every few
minutes. With --wait (the default) it waits until the operator has recorded it and prints the new idle
expiry (an empty line when the namespace has no idle expiry: the class has none, or a Pod is active).

A heartbeat never moves the hard TTL (use extend); the operator ignores one dated more than a minute
ahead of its clock. A heartbeat wakes a sleeping namespace (see wake). An expired claim cannot be kept
alive.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name, err := h.claimName(a)
			if err != nil {
				return err
			}
			return h.run(cmd.Context(), name)
		},
	}
	cmd.Flags().BoolVar(&h.wait, "wait", true, "wait until the operator has recorded the heartbeat")
	cmd.Flags().DurationVar(&h.timeout, "timeout", time.Minute, "how long to wait for the operator")
	return cmd
}

// heartbeatValue is the heartbeat annotation's value for t: RFC 3339, in seconds, UTC.
func heartbeatValue(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// heartbeatPatch is a merge patch that sets the heartbeat annotation to at.
func heartbeatPatch(at time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{tenancyv1alpha1.HeartbeatAnnotation: heartbeatValue(at)}}})
}

func (h *heartbeatOptions) run(ctx context.Context, name string) error {
	s, err := h.session()
	if err != nil {
		return err
	}
	claim, err := s.mustGet(ctx, name)
	if err != nil {
		return err
	}
	if st := cli.Classify(claim); st.Phase == cli.PhaseExpired || st.Phase == cli.PhaseDeleting {
		return &cli.RefusedError{Claim: s.ns + "/" + name, Reason: tenancyv1alpha1.ExpiredReason, Message: fmt.Sprintf("the claim is %s: a heartbeat cannot keep it", st.Phase)}
	}
	at := time.Now().Truncate(time.Second)
	patch, err := heartbeatPatch(at)
	if err != nil {
		return err
	}
	if _, err := s.claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cli.PluginCommand}); err != nil {
		return fmt.Errorf("sending a heartbeat to namespaceclaim %s/%s: %w", s.ns, name, err)
	}
	h.logf("namespaceclaim %s/%s: heartbeat %s sent", s.ns, name, heartbeatValue(at))
	if !h.wait {
		return nil
	}
	what := "to record the heartbeat"
	if h.wake {
		what = "to wake the namespace"
	}
	done, err := s.waitFor(ctx, name, h.timeout, what, func(c *tenancyv1alpha1.NamespaceClaim) (bool, error) {
		if c == nil {
			return false, &cli.NotFoundError{What: fmt.Sprintf("namespaceclaim %s/%s (deleted meanwhile)", s.ns, name)}
		}
		return cli.HeartbeatRecorded(c, at, h.wake), nil
	})
	if err != nil {
		return err
	}
	if h.wake {
		h.logf("namespaceclaim %s/%s: %s", s.ns, name, cli.Lifecycle(done))
	}
	if done.Status.IdleExpiresAt == nil {
		_, err = fmt.Fprintln(h.out)
		return err
	}
	_, err = fmt.Fprintln(h.out, done.Status.IdleExpiresAt.UTC().Format(time.RFC3339))
	return err
}
