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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

func TestExtendedTTL(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		expiresAt time.Time
		by        time.Duration
		want      time.Duration
		wantUsage bool
		wantError bool
	}{
		{"default TTL of 24h, by 2h", created.Add(24 * time.Hour), 2 * time.Hour, 26 * time.Hour, false, false},
		{"4h, by 30m", created.Add(4 * time.Hour), 30 * time.Minute, 4*time.Hour + 30*time.Minute, false, false},
		{"sub-second expiry rounds", created.Add(time.Hour + 400*time.Millisecond), time.Minute, time.Hour + time.Minute, false, false},
		{"zero by", created.Add(time.Hour), 0, 0, true, false},
		{"negative by", created.Add(time.Hour), -time.Hour, 0, true, false},
		{"above the API's maximum", created.Add(MaxTTL), time.Hour, 0, true, false},
		{"no expiry yet", time.Time{}, time.Hour, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExtendedTTL(created, tc.expiresAt, tc.by)
			switch {
			case tc.wantUsage && ExitCode(err) != ExitUsage:
				t.Fatalf("error %v, want a usage error", err)
			case tc.wantError && err == nil:
				t.Fatal("no error")
			case !tc.wantUsage && !tc.wantError && err != nil:
				t.Fatalf("error %v", err)
			}
			if got != tc.want {
				t.Errorf("ExtendedTTL() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTTLOnReuse(t *testing.T) {
	withTTL := &tenancyv1alpha1.NamespaceClaim{}
	withTTL.Name = "a"
	withTTL.Spec.TTL = &metav1.Duration{Duration: 4 * time.Hour}
	classDefault := &tenancyv1alpha1.NamespaceClaim{}
	classDefault.Name = "b"
	for _, tc := range []struct {
		name  string
		claim *tenancyv1alpha1.NamespaceClaim
		ttl   time.Duration
		ok    bool
	}{
		{"no --ttl", withTTL, 0, true},
		{"the same ttl", withTTL, 4 * time.Hour, true},
		{"another ttl", withTTL, 8 * time.Hour, false},
		{"a ttl where the class's default applies", classDefault, time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := TTLOnReuse(tc.claim, tc.ttl)
			if (err == nil) != tc.ok {
				t.Fatalf("TTLOnReuse() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && (ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "kubectl nsclaim extend")) {
				t.Errorf("TTLOnReuse() = %v (exit %d), want a usage error that names extend", err, ExitCode(err))
			}
		})
	}
}
