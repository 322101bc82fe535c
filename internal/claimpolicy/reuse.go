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

import "time"

// NameReuseWindow is how long after a namespace's previous incarnation could last have authenticated a
// request that the tenant of a new namespace of the same name waits for its grants. kube-apiserver
// caches a successful token authentication for 10 s (TokenSuccessCacheTTL) and authorizes by user name,
// and a ServiceAccount re-created with the same name has the same user name: without the wait, a
// token of the previous holder that was used just before its namespace went would be authorized by the
// new holder's RoleBindings until its cache entry expires. The 5 s beyond the 10 s cover the API
// server's ServiceAccount informer and the skew between its clock and the operator's.
const NameReuseWindow = 15 * time.Second

// GrantsAt decides when the grants of a namespace created at created may be made: a window after its
// creation when its name was in use moments before (reused), or when it was created too soon after
// this process started to know (the informer had not been watching long enough); at once otherwise.
// The previous holder's ServiceAccount went before the new namespace could be created, so a window
// after the creation is a window after the last moment its token authenticated.
func GrantsAt(created time.Time, reused bool, started time.Time, window time.Duration) time.Time {
	if created.IsZero() {
		return time.Time{}
	}
	if reused || created.Before(started.Add(window)) {
		return created.Add(window)
	}
	return time.Time{}
}
