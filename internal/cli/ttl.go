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

package cli

import (
	"fmt"
	"time"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// MaxTTL is the longest spec.ttl the API accepts (the CRD's CEL rule).
const MaxTTL = 8760 * time.Hour

// ExtendedTTL returns the spec.ttl that moves a claim's expiry later by "by". A claim's TTL counts from
// its creation, and the API offers no other way to extend: spec.ttl may be raised (up to the class's
// lifetime.maxTTL, which the operator enforces) until the claim expires. The current TTL is read from
// status.expiresAt, so a claim that used its class's default TTL is extended too. The result is whole
// seconds and at most MaxTTL.
func ExtendedTTL(created, expiresAt time.Time, by time.Duration) (time.Duration, error) {
	if by <= 0 {
		return 0, &UsageError{Msg: fmt.Sprintf("--by must be positive, got %s", by)}
	}
	if expiresAt.IsZero() {
		return 0, fmt.Errorf("the claim has no status.expiresAt yet: wait until the operator has read it")
	}
	ttl := (expiresAt.Sub(created) + by).Round(time.Second)
	if ttl > MaxTTL {
		return 0, &UsageError{Msg: fmt.Sprintf("the TTL would be %s, above the API's maximum %s", ttl, MaxTTL)}
	}
	return ttl, nil
}

// TTLOnReuse checks a --ttl given to "claim" for a claim that exists and is reused: the same TTL (or
// none given) is fine; another is a usage error that says why and what to do, never silently ignored.
func TTLOnReuse(existing *tenancyv1alpha1.NamespaceClaim, ttl time.Duration) error {
	if ttl == 0 || (existing.Spec.TTL != nil && existing.Spec.TTL.Duration == ttl.Round(time.Second)) {
		return nil
	}
	has := "the class's default TTL"
	if existing.Spec.TTL != nil {
		has = "ttl " + existing.Spec.TTL.Duration.String()
	}
	return &UsageError{Msg: fmt.Sprintf("namespaceclaim %s exists with %s; --ttl %s applies only to a new claim: "+
		"extend it (kubectl nsclaim extend %s --by DURATION, within the class's maxTTL), or claim it anew (--if-exists=recreate)",
		existing.Name, has, ttl, existing.Name)}
}
