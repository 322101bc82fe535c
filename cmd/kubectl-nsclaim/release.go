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
	"time"

	"github.com/spf13/cobra"
)

type releaseOptions struct {
	*options
	wait, ignoreNotFound bool
	timeout              time.Duration
}

func newReleaseCommand(o *options) *cobra.Command {
	r := &releaseOptions{options: o}
	cmd := &cobra.Command{
		Use:   "release [NAME]",
		Short: "Delete a claim; its namespace goes with it",
		Long: `Delete a claim; the operator deletes its namespace and credentials. With --wait, return once the
claim is gone, which is once its namespace is gone (the claim's finalizer waits for it). A claim that
does not exist is not an error unless --ignore-not-found=false, so a clean-up step may always run.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name, err := r.claimName(a)
			if err != nil {
				return err
			}
			return r.run(cmd.Context(), name)
		},
	}
	cmd.Flags().BoolVar(&r.wait, "wait", false, "wait until the claim and its namespace are gone")
	cmd.Flags().DurationVar(&r.timeout, "timeout", 3*time.Minute, "how long to wait")
	cmd.Flags().BoolVar(&r.ignoreNotFound, "ignore-not-found", true, "a missing claim is not an error")
	return cmd
}

func (r *releaseOptions) run(ctx context.Context, name string) error {
	s, err := r.session()
	if err != nil {
		return err
	}
	claim, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	if claim == nil {
		r.forget(name)
		if r.ignoreNotFound {
			r.logf("namespaceclaim %s/%s does not exist; nothing to release", s.ns, name)
			return nil
		}
		_, err = s.mustGet(ctx, name)
		return err
	}
	if err := s.delete(ctx, name, claim.UID); err != nil {
		return err
	}
	r.forget(name)
	r.logf("namespaceclaim %s/%s deleted; namespace %s goes with it", s.ns, name, claim.Status.Namespace)
	if !r.wait {
		return nil
	}
	if err := s.waitGone(ctx, name, r.timeout); err != nil {
		return err
	}
	r.logf("namespaceclaim %s/%s and its namespace are gone", s.ns, name)
	return nil
}
