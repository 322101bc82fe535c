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

// Package kube holds the few helpers every reconciler of the operator uses when it talks to the API
// server: the field manager of its writes, how a read that found nothing is told from one that failed,
// and the names Kubernetes itself gives. It has no client and no state.
package kube

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FieldOwner is the field manager name of every write the operator makes.
const FieldOwner = "nsclaim"

// DefaultServiceAccount is the ServiceAccount the API server gives a Pod that names none; the
// serviceaccount controller of kube-controller-manager creates it in every namespace.
const DefaultServiceAccount = "default"

// Found turns the error of a Get into whether the object exists: NotFound is (false, nil), any other
// error is returned, and no error is (true, nil).
func Found(err error) (bool, error) {
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
