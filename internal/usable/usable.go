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

// Package usable says whether a namespace the operator made is usable: the one rule for a claim's
// namespace and a pooled one (the class's ResourceQuota in force, the `default` ServiceAccount made).
// It reads; it decides nothing else (the quota's rule itself is claimpolicy.QuotaPending, pure).
package usable

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// Checker says whether a namespace the operator made is usable: a Pod that fits its class can be
// created in it at once. That is so once kube-controller-manager has done its part: computed the status
// of the class's ResourceQuota for the limits the class sets (until then the quota admission plugin
// either enforces nothing or refuses Pods with "status unknown for quota"; claimpolicy.QuotaPending) and
// created the `default` ServiceAccount. The LimitRange needs nothing: its admission reads its spec.
// A claim's namespace and a pooled one are usable by this one rule.
type Checker struct {
	// Reader reads the ResourceQuota: the manager's cache, whose watch brings its status.
	Reader client.Reader
	// APIReader reads the `default` ServiceAccount (metadata only) when ServiceAccounts is nil.
	APIReader client.Reader
	// ServiceAccounts reports each namespace's `default` ServiceAccount; nil reads it from APIReader.
	ServiceAccounts *watchcache.DefaultServiceAccounts
}

// Pending returns why namespace is not usable yet, or "" when it is: quota is the ResourceQuota the
// class wants in it (nil: none), and the ServiceAccount is looked for only once the quota is in force.
// poll is true when what it waits for is the ServiceAccount read from APIReader: no watch reports its
// creation, so the caller must look again.
func (u Checker) Pending(ctx context.Context, namespace string, quota *corev1.ResourceQuota) (pending string, poll bool, err error) {
	if quota != nil {
		key := client.ObjectKeyFromObject(quota)
		have := &corev1.ResourceQuota{}
		ok, err := kube.Found(u.Reader.Get(ctx, key, have))
		if err != nil {
			return "", false, fmt.Errorf("reading ResourceQuota %s: %w", key, err)
		}
		if !ok {
			have = nil
		}
		if msg := claimpolicy.QuotaPending(quota, have); msg != "" {
			return msg, false, nil
		}
	}
	key := client.ObjectKey{Namespace: namespace, Name: kube.DefaultServiceAccount}
	var ok bool
	if u.ServiceAccounts != nil {
		ok, err = u.ServiceAccounts.Exists(ctx, namespace)
	} else {
		ok, err = kube.Found(u.APIReader.Get(ctx, key, watchcache.NewServiceAccountMetadata()))
		poll = !ok
	}
	if err != nil {
		return "", false, fmt.Errorf("reading ServiceAccount %s: %w", key, err)
	}
	if ok {
		return "", false, nil
	}
	return fmt.Sprintf("Waiting for kube-controller-manager to create ServiceAccount %s in namespace %s", kube.DefaultServiceAccount, namespace), poll, nil
}
