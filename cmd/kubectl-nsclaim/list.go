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
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

type listOptions struct {
	*options
	mine   bool
	output string
}

func newListCommand(o *options) *cobra.Command {
	l := &listOptions{options: o}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the claims of the current namespace",
		Long: `List the claims of the current namespace (-n) with their phase, namespace and expiry. --mine keeps
those whose creator (recorded by the API server in spec.creator) is the caller.`,
		Args: args(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error { return l.run(cmd.Context()) },
	}
	cmd.Flags().BoolVar(&l.mine, "mine", false, "only claims the caller created")
	cmd.Flags().StringVarP(&l.output, "output", "o", "", "name (claim names) or json; default a table")
	return cmd
}

func (l *listOptions) run(ctx context.Context) error {
	if l.output != "" && l.output != outputName && l.output != outputJSON {
		return &cli.UsageError{Msg: fmt.Sprintf("-o must be name or json, not %q", l.output)}
	}
	s, err := l.session()
	if err != nil {
		return err
	}
	list, err := s.claims.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaceclaims in %s: %w", s.ns, err)
	}
	me := ""
	if l.mine {
		review, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("asking the API server who the caller is: %w", err)
		}
		me = review.Status.UserInfo.Username
	}
	claims := make([]tenancyv1alpha1.NamespaceClaim, 0, len(list.Items))
	for i := range list.Items {
		c, err := toClaim(&list.Items[i])
		if err != nil {
			return err
		}
		if l.mine && (c.Spec.Creator == nil || c.Spec.Creator.Username != me) {
			continue
		}
		claims = append(claims, *c)
	}
	switch l.output {
	case outputJSON:
		return printJSON(l.options, claims)
	case outputName:
		for _, c := range claims {
			if _, err := fmt.Fprintln(l.out, c.Name); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(l.out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAME\tPHASE\tREASON\tNAMESPACE\tCLASS\tEXPIRES\tAGE")
	for _, c := range claims {
		st := cli.Classify(&c)
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, st.Phase, st.Reason, c.Status.Namespace, c.Status.ClassName, cli.Expiry(&c),
			time.Since(c.CreationTimestamp.Time).Round(time.Second))
	}
	return w.Flush()
}
