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

// Package namespaceclaim is the claim reconciler: for each NamespaceClaim it provisions a namespace,
// its objects and scoped credentials as the claim's class says, keeps them so, and deletes the namespace
// when the claim is deleted or expires. Reconcile reads the claim, runs the phases over one claimScope,
// and writes the status once; docs/architecture.md walks a claim through them.
package namespaceclaim
