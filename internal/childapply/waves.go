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

package childapply

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Result is what Apply answered for one child.
type Result struct {
	// Repaired and Deferred are Apply's answers; Err is its error.
	Repaired, Deferred bool
	Err                error
}

// Wave selects the children that one wave of ApplyInWaves applies.
type Wave func(client.Object) bool

// ApplyInWaves applies objs in waves, one after the other: each wave applies at once, concurrently,
// the objects it selects (an object no wave selects is not applied). It returns Apply's answer for
// each of objs, in their order. The order of the waves is the order in which the API server sees the
// writes begin: RBAC writes wait in kube-apiserver's escalation check, so a wave may be there to put
// one write alone before others.
func (a Applier) ApplyInWaves(ctx context.Context, objs []client.Object, o Options, waves ...Wave) []Result {
	out := make([]Result, len(objs))
	for _, wave := range waves {
		var wg sync.WaitGroup
		for i, want := range objs {
			if !wave(want) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i].Repaired, out[i].Deferred, out[i].Err = a.Apply(ctx, want, o)
			}()
		}
		wg.Wait()
	}
	return out
}
