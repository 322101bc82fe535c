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

// Package budget holds the pure decisions of NamespaceBudgets (docs/budgets.md): which budgets cover a
// claim, what a claim is charged (its class's ResourceQuota hard, and one claim), the order in which
// waiting claims are admitted (creation time, then name), whether a claim fits, waits, is refused or
// makes room by evicting, and which claim an eviction deletes. It reads no API: the claim reconciler
// (namespaceclaim/budget) and the budget controller feed it what they listed.
package budget
