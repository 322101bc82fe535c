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
