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

// Package lifetime holds the claim reconciler's lifetime phases: the activity phase (Activity: the
// namespace's Pods and the claim's heartbeat set the idle clock) and the expiry phase (Expiry: the hard
// and idle TTLs end the claim, its namespace and its credentials deleted through Ender). Each is a
// function over the part of the claim's reconcile it reads and writes (ActivityClaim, ExpiryClaim).
package lifetime
