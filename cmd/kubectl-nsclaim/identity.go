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
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// Bounds of pipeline-identity's --duration: the TokenRequest API's minimum, and 30 days.
const (
	minIdentityDuration = 10 * time.Minute
	maxIdentityDuration = 30 * 24 * time.Hour
)

type identityOptions struct {
	*options
	name, role, write string
	duration          time.Duration
}

func newPipelineIdentityCommand(o *options) *cobra.Command {
	p := &identityOptions{options: o}
	cmd := &cobra.Command{
		Use:   "pipeline-identity NAMESPACE",
		Short: "Make a pipeline identity in NAMESPACE and print its kubeconfig (for an admin)",
		Long: `Make a pipeline identity (token mode): a ServiceAccount in NAMESPACE (the requester namespace, which
must exist), a RoleBinding there to the shipped pipeline ClusterRole (nsclaim-operator-pipeline-role:
claims, and get on Secrets for their kubeconfigs; nothing else, nothing outside NAMESPACE), and a
kubeconfig with a token of the TokenRequest API that expires after --duration (at most 720h). Run it as
an admin; store the kubeconfig as the CI's secret (NSCLAIM_KUBECONFIG) and make a new one before it
expires. Both objects are kept if they exist; a RoleBinding to another role is an error.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error { return p.run(cmd.Context(), a[0]) },
	}
	cmd.Flags().StringVar(&p.name, "name", "nsclaim-pipeline", "the ServiceAccount's name")
	cmd.Flags().StringVar(&p.role, "role", "nsclaim-operator-pipeline-role", "the ClusterRole bound in NAMESPACE")
	cmd.Flags().DurationVar(&p.duration, "duration", 24*time.Hour, "the token's lifetime (10m to 720h)")
	cmd.Flags().StringVarP(&p.write, "write", "w", "", "write the kubeconfig to this file (mode 0600) instead of stdout")
	return cmd
}

func (p *identityOptions) run(ctx context.Context, ns string) error {
	if p.duration < minIdentityDuration || p.duration > maxIdentityDuration {
		return &cli.UsageError{Msg: fmt.Sprintf("--duration must be between %s and %s", minIdentityDuration, maxIdentityDuration)}
	}
	cfg, err := p.flags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := p.ensureObjects(ctx, kube, ns); err != nil {
		return err
	}
	seconds := int64(p.duration.Seconds())
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, p.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", ns, p.name, err)
	}
	exp := tr.Status.ExpirationTimestamp.Time
	if d := time.Until(exp); d < p.duration-time.Minute {
		p.logf("warning: the API server shortened the token's lifetime to %s (--service-account-max-token-expiration)", d.Round(time.Minute))
	}
	kc, err := cli.PipelineKubeconfig(cli.FromRESTConfig(cfg), ns, ns+"-"+p.name, tr.Status.Token)
	if err != nil {
		return err
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	p.logf("pipeline identity system:serviceaccount:%s:%s, bound to ClusterRole %s in %s; its token expires %s", ns, p.name, p.role, ns, exp.UTC().Format(time.RFC3339))
	if p.write != "" {
		return writePrivate(p.write, b)
	}
	_, err = p.out.Write(b)
	return err
}

// ensureObjects creates the ServiceAccount and the RoleBinding unless they exist.
func (p *identityOptions) ensureObjects(ctx context.Context, kube kubernetes.Interface, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/created-by": cli.PluginCommand}}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, p.name, err)
	}
	want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: p.role}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: sa.Labels}, RoleRef: want,
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.name, Namespace: ns}}}
	_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := kube.RbacV1().RoleBindings(ns).Get(ctx, p.name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("reading RoleBinding %s/%s: %w", ns, p.name, getErr)
		}
		if existing.RoleRef != want {
			return &cli.ExistsError{Claim: "RoleBinding " + ns + "/" + p.name, Detail: fmt.Sprintf("it binds %s %s, not ClusterRole %s", existing.RoleRef.Kind, existing.RoleRef.Name, p.role)}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating RoleBinding %s/%s: %w", ns, p.name, err)
	}
	return nil
}
