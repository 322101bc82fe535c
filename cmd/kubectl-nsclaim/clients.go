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
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/cli"
)

// claimsResource is the NamespaceClaim API.
var claimsResource = tenancyv1alpha1.GroupVersion.WithResource("namespaceclaims")

// session is one command's connection: the claims of one namespace and the core API.
type session struct {
	ns     string
	claims dynamic.ResourceInterface
	kube   kubernetes.Interface
	// logf writes a progress line to stderr.
	logf func(format string, args ...any)
}

func (o *options) session() (*session, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace: %w", err)
	}
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &session{ns: ns, claims: dyn.Resource(claimsResource).Namespace(ns), kube: kube, logf: o.logf}, nil
}

func toClaim(obj runtime.Object) (*tenancyv1alpha1.NamespaceClaim, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	claim := &tenancyv1alpha1.NamespaceClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, claim); err != nil {
		return nil, fmt.Errorf("reading namespaceclaim %s: %w", u.GetName(), err)
	}
	return claim, nil
}

// get returns the claim, or (nil, nil) if it does not exist.
func (s *session) get(ctx context.Context, name string) (*tenancyv1alpha1.NamespaceClaim, error) {
	u, err := s.claims.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespaceclaim %s/%s: %w", s.ns, name, err)
	}
	return toClaim(u)
}

// mustGet returns the claim, or a NotFound error.
func (s *session) mustGet(ctx context.Context, name string) (*tenancyv1alpha1.NamespaceClaim, error) {
	claim, err := s.get(ctx, name)
	if err == nil && claim == nil {
		err = &cli.NotFoundError{What: fmt.Sprintf("namespaceclaim %s/%s", s.ns, name)}
	}
	return claim, err
}

func (s *session) create(ctx context.Context, claim *tenancyv1alpha1.NamespaceClaim) (*tenancyv1alpha1.NamespaceClaim, error) {
	claim.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("NamespaceClaim"))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(claim)
	if err != nil {
		return nil, err
	}
	u, err := s.claims.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: cli.PluginCommand})
	if err != nil {
		return nil, fmt.Errorf("creating namespaceclaim %s/%s: %w", s.ns, claim.Name, err)
	}
	return toClaim(u)
}

// delete deletes the claim with uid (a claim recreated meanwhile under the same name is left alone);
// an empty uid deletes whatever claim has the name. A claim already gone is not an error.
func (s *session) delete(ctx context.Context, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if err := s.claims.Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespaceclaim %s/%s: %w", s.ns, name, err)
	}
	return nil
}

// claimCondition is a condition on the claim's latest state; nil means the claim is gone.
type claimCondition func(claim *tenancyv1alpha1.NamespaceClaim) (bool, error)

// waitFor watches the claim (a list, then a watch from its resourceVersion, re-established if it
// breaks; never a poll) until cond holds or returns an error, or timeout passes. It returns the claim's
// last state (nil if gone). describe names what is awaited, for the timeout's message.
func (s *session) waitFor(ctx context.Context, name string, timeout time.Duration, describe string, cond claimCondition) (*tenancyv1alpha1.NamespaceClaim, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return s.claims.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return s.claims.Watch(ctx, opts)
		},
	}
	var last *tenancyv1alpha1.NamespaceClaim
	precondition := func(store cache.Store) (bool, error) {
		if len(store.List()) > 0 {
			return false, nil
		}
		return cond(nil)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, precondition, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			last = nil
			return cond(nil)
		}
		if ev.Type == watch.Error {
			return false, apierrors.FromObject(ev.Object)
		}
		claim, err := toClaim(ev.Object)
		if err != nil {
			return false, err
		}
		last = claim
		return cond(claim)
	})
	if errors.Is(err, watchtools.ErrWatchClosed) || errors.Is(err, context.DeadlineExceeded) || (err != nil && ctx.Err() != nil) {
		state, queued := "gone", false
		if last != nil {
			st := cli.Classify(last)
			state, queued = st.String(), st.Phase == cli.PhaseQueued
		}
		return last, &cli.TimeoutError{What: fmt.Sprintf("namespaceclaim %s/%s %s (after %s)", s.ns, name, describe, timeout), Last: state, Queued: queued}
	}
	return last, err
}

// serverVersion is the cluster's Kubernetes version when the guidance for reason depends on it (a
// fence instruction), else (or if it cannot be read) empty.
func (s *session) serverVersion(reason string) string {
	if !cli.NeedsServerVersion(reason) {
		return ""
	}
	v, err := s.kube.Discovery().ServerVersion()
	if err != nil {
		return ""
	}
	return v.GitVersion
}

// waitGone waits until the claim is deleted.
func (s *session) waitGone(ctx context.Context, name string, timeout time.Duration) error {
	_, err := s.waitFor(ctx, name, timeout, "to be gone", func(c *tenancyv1alpha1.NamespaceClaim) (bool, error) { return c == nil, nil })
	return err
}

// waitReady waits until the claim is Ready, and fails at once when it is refused, expires or goes
// away. It prints a progress line at every change of state (cli.ProgressLine), so a step's log is never
// silent while it waits.
func (s *session) waitReady(ctx context.Context, name string, timeout time.Duration) (*tenancyv1alpha1.NamespaceClaim, error) {
	last := ""
	return s.waitFor(ctx, name, timeout, "to be Ready", func(c *tenancyv1alpha1.NamespaceClaim) (bool, error) {
		if c == nil {
			return false, &cli.NotFoundError{What: fmt.Sprintf("namespaceclaim %s/%s (deleted while waiting)", s.ns, name)}
		}
		st := cli.Classify(c)
		if line := cli.ProgressLine(s.ns+"/"+name, st); line != last && s.logf != nil {
			last = line
			s.logf("%s", line)
		}
		switch st.Phase {
		case cli.PhaseReady:
			return true, nil
		case cli.PhaseRefused, cli.PhaseExpired, cli.PhaseDeleting:
			reason := st.Reason
			if st.Phase == cli.PhaseExpired {
				reason = tenancyv1alpha1.ExpiredReason
			}
			if st.Phase == cli.PhaseDeleting && reason != tenancyv1alpha1.ReleasedReason {
				reason, st.Message = tenancyv1alpha1.ReleasedReason, "the claim is being deleted"
			}
			return false, &cli.RefusedError{Claim: s.ns + "/" + name, Reason: reason, Message: st.Message, ServerVersion: s.serverVersion(reason)}
		}
		return false, nil
	})
}
