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

package claimpolicy

import (
	"testing"
	"time"
)

// TestGrantsAt decides when a namespace's grants may be made.
func TestGrantsAt(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := NameReuseWindow
	tests := []struct {
		name    string
		created time.Time
		reused  bool
		want    time.Time
	}{
		{name: "a fresh name long after the start: at once", created: started.Add(time.Hour)},
		{name: "a reused name: a window after the creation", created: started.Add(time.Hour), reused: true, want: started.Add(time.Hour + w)},
		{name: "made just after the start, history unknown: a window after the creation", created: started.Add(w - time.Second), want: started.Add(2*w - time.Second)},
		{name: "made before the start: its window is long past or still runs", created: started.Add(-time.Second), want: started.Add(w - time.Second)},
		{name: "made exactly a window after the start: at once", created: started.Add(w)},
		{name: "no creation time known: at once", created: time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GrantsAt(tt.created, tt.reused, started, w); !got.Equal(tt.want) {
				t.Fatalf("GrantsAt = %v, want %v", got, tt.want)
			}
		})
	}
}
