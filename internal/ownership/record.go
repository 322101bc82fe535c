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

// Package ownership is nsclaim's proof that it created a namespace: a record in the namespace's
// OwnershipAnnotation that only the holder of the ownership key can write, bound to the namespace
// (its name, and its UID or its creation time) and to what it was made for (a claim, or a class's
// pool). Labels are an index for caches and watches that anyone who may patch a namespace can copy;
// the record cannot be copied onto another namespace, nor made for another claim, without the key.
//
// Two forms, both a base64url HMAC-SHA256:
//   - "u1.<mac>" binds the namespace's name and UID. It is written whenever the operator knows the
//     UID: at a pool's handout, and when it records a namespace made by an earlier release.
//   - "t1.<unix seconds>.<mac>" binds the namespace's name and the moment the operator asked for it,
//     and is written in the create request itself (the UID does not exist yet), so a namespace is
//     never without its record, even if the operator stops right after the create. It verifies only on
//     a namespace whose creationTimestamp, set by the API server, is within CreationWindow of that
//     moment: a namespace of the same name made later (by anyone, after the first is gone) does not
//     match it.
//
// Everything here is pure: the key is given, nothing is read from the API server.
package ownership

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// KeySize is the size of an ownership key, in bytes.
const KeySize = 32

// CreationWindow is how far a namespace's creationTimestamp may be from the moment written in its
// "t1" record: the create request's own latency and the clock skew between the operator and the API
// server.
const CreationWindow = time.Minute

// Key signs and verifies ownership records. The zero Key is invalid.
type Key struct{ secret []byte }

// NewKey returns the Key of secret, which must hold at least KeySize bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < KeySize {
		return nil, errors.New("an ownership key needs at least 32 bytes")
	}
	return &Key{secret: append([]byte(nil), secret...)}, nil
}

// Subject is what a namespace was made for: a claim (its namespace, name and UID), or the warm pool of
// the class of UID PoolClassUID (no claim holds it yet).
type Subject struct {
	ClaimNamespace, ClaimName, ClaimUID string
	PoolClassUID                        string
}

// Claim returns the Subject of a claim.
func Claim(namespace, name, uid string) Subject {
	return Subject{ClaimNamespace: namespace, ClaimName: name, ClaimUID: uid}
}

// Pool returns the Subject of a pooled namespace of the class of UID classUID.
func Pool(classUID string) Subject { return Subject{PoolClassUID: classUID} }

// valid reports whether s names exactly one thing: a whole claim, or a pool.
func (s Subject) valid() bool {
	claim := s.ClaimNamespace != "" && s.ClaimName != "" && s.ClaimUID != ""
	none := s.ClaimNamespace == "" && s.ClaimName == "" && s.ClaimUID == ""
	return (claim && s.PoolClassUID == "") || (none && s.PoolClassUID != "")
}

// mac is the record's MAC over its form and fields, each NUL-terminated (no field holds a NUL).
func (k *Key) mac(fields ...string) string {
	h := hmac.New(sha256.New, k.secret)
	for _, f := range fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func (s Subject) fields() []string {
	if s.PoolClassUID != "" {
		return []string{"pool", s.PoolClassUID}
	}
	return []string{"claim", s.ClaimNamespace, s.ClaimName, s.ClaimUID}
}

// AtCreate returns the record to put in the create request of namespace name for s, asked for at at.
func (k *Key) AtCreate(name string, s Subject, at time.Time) string {
	unix := strconv.FormatInt(at.Unix(), 10)
	return "t1." + unix + "." + k.mac(append([]string{"nsclaim-ownership-t1", name, unix}, s.fields()...)...)
}

// ForUID returns the record of namespace name of UID uid for s.
func (k *Key) ForUID(name, uid string, s Subject) string {
	return "u1." + k.mac(append([]string{"nsclaim-ownership-u1", name, uid}, s.fields()...)...)
}

// Verify reports whether ns carries a record of this key that binds it to s.
func (k *Key) Verify(ns metav1.Object, s Subject) bool {
	if k == nil || !s.valid() {
		return false
	}
	rec := ns.GetAnnotations()[tenancyv1alpha1.OwnershipAnnotation]
	form, rest, _ := strings.Cut(rec, ".")
	switch form {
	case "u1":
		return ns.GetUID() != "" && hmac.Equal([]byte(rec), []byte(k.ForUID(ns.GetName(), string(ns.GetUID()), s)))
	case "t1":
		unix, _, _ := strings.Cut(rest, ".")
		sec, err := strconv.ParseInt(unix, 10, 64)
		if err != nil {
			return false
		}
		at := time.Unix(sec, 0)
		created := ns.GetCreationTimestamp().Time
		if created.IsZero() || created.Before(at.Add(-CreationWindow)) || created.After(at.Add(CreationWindow)) {
			return false
		}
		return hmac.Equal([]byte(rec), []byte(k.AtCreate(ns.GetName(), s, at)))
	}
	return false
}

// HasRecord reports whether ns carries an ownership record at all (valid or not).
func HasRecord(ns metav1.Object) bool {
	_, ok := ns.GetAnnotations()[tenancyv1alpha1.OwnershipAnnotation]
	return ok
}
