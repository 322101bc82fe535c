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
	"time"

	"github.com/spf13/cobra"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func newWakeCommand(o *options) *cobra.Command {
	h := &heartbeatOptions{options: o, wake: true}
	cmd := &cobra.Command{
		Use:   "wake [NAME]",
		Short: "Wake a sleeping namespace: its Deployments, StatefulSets and CronJobs get back what the sleep took",
		Long: `Wake the claim's namespace if it sleeps (phase Sleeping: the class's lifetime.sleepAfter scaled its
Deployments and StatefulSets to 0 and suspended its CronJobs; docs/lifecycle.md). It sends a heartbeat
(the annotation ` + tenancyv1alpha1.HeartbeatAnnotation + `, set to now), which also starts the idle clock
again; the operator then restores the recorded replica counts and resumes the CronJobs, on the same
objects only (an object replaced or created while asleep is left alone). With --wait (the default) it
waits until the operator has done so and prints the new idle expiry, as heartbeat does.

A namespace that does not sleep just gets the heartbeat. heartbeat and extend wake a sleeping namespace
too. An expired claim cannot be woken.`,
		Args: args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			name, err := o.claimName(a)
			if err != nil {
				return err
			}
			return h.run(cmd.Context(), name)
		},
	}
	cmd.Flags().BoolVar(&h.wait, "wait", true, "wait until the operator has woken the namespace")
	cmd.Flags().DurationVar(&h.timeout, "timeout", 2*time.Minute, "how long to wait for the operator")
	return cmd
}
