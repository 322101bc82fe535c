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

package ownership

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/kube"
)

// keyField is the Secret data key that holds the ownership key.
const keyField = "key"

// LoadOrCreateKey returns the ownership key kept in the Secret OwnershipKeySecret of namespace (the
// operator's), and when that Secret was created: namespaces created before carry no record (an
// earlier release made them; see Verifier). The first replica to start creates it with KeySize random
// bytes; every other replica, and every restart, reads the same one. The operator may get only this
// Secret (config/rbac/ownership_key_role.yaml). A Secret without a usable key is an error: a new key
// would make every record unverifiable, so one is never replaced silently.
func LoadOrCreateKey(ctx context.Context, c client.Client, namespace string) (*Key, time.Time, error) {
	if namespace == "" {
		return nil, time.Time{}, errors.New("the ownership key needs the operator's namespace: set POD_NAMESPACE or --leader-election-namespace")
	}
	secret := &corev1.Secret{}
	keyRef := client.ObjectKey{Namespace: namespace, Name: tenancyv1alpha1.OwnershipKeySecret}
	err := c.Get(ctx, keyRef, secret)
	if apierrors.IsNotFound(err) {
		b := make([]byte, KeySize)
		if _, err := rand.Read(b); err != nil {
			return nil, time.Time{}, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tenancyv1alpha1.OwnershipKeySecret,
				Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{keyField: b},
		}
		err = c.Create(ctx, secret, client.FieldOwner(kube.FieldOwner))
		if apierrors.IsAlreadyExists(err) {
			// Another replica made it first: use that one.
			secret = &corev1.Secret{}
			err = c.Get(ctx, keyRef, secret)
		}
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading or creating the ownership key Secret %s: %w", keyRef, err)
	}
	key, err := NewKey(secret.Data[keyField])
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("the ownership key Secret %s holds no usable key (%w); restore it from a backup:"+
			" every namespace nsclaim made is recorded with it", keyRef, err)
	}
	return key, secret.CreationTimestamp.Time, nil
}
