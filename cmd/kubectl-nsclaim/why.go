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
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

func newWhyCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "why [NAME]",
		Short: "Explain a claim's state: its conditions, who must act and what to do",
		Args:  args(0, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			s, err := o.session()
			if err != nil {
				return err
			}
			name, err := o.claimName(a)
			if err != nil {
				return err
			}
			claim, err := s.mustGet(cmd.Context(), name)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(o.out, cli.Explain(claim))
			return err
		},
	}
}
