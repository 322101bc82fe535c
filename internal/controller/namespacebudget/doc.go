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

// Package namespacebudget holds the budget reconciler, the one writer of a NamespaceBudget's status:
// what the namespaces it covers are charged (Terminating and sleeping ones included), what is
// available, how many claims wait and since when, and its Ready condition, in one status patch.
// Admission itself is the claim reconciler's (namespaceclaim/budget, through the admission ledger).
package namespacebudget
