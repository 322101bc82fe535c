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

// Package admission is nsclaim's one admission component: a ledger of the slots a per-requester-namespace
// limit hands out (a class's maxClaimsPerNamespace today; the budget's policies reuse it). It decides
// nothing about policy: the caller's check does, against the holders the ledger counts.
//
// The limit holds under any interleaving because:
//   - only the leader admits, and the ledger lives in its memory: a process that starts or becomes the
//     leader starts with an empty ledger, and the first admission of a key seeds it from the API server
//     (a live list of the namespaces nsclaim owns, never the cache), so whatever a previous process or
//     leader made is counted (that leader stopped before this one could take the lease);
//   - a check and the reservation it grants are one step under the ledger's lock, which is held for no
//     API call: two claims of one key never both see the last free slot;
//   - a reservation is made before the namespace is created or handed out, becomes a holding once it
//     exists (Reservation.Hold, also when the outcome of the write is unknown) and is dropped only when
//     the write certainly made nothing (Reservation.Release), or when the namespace is seen terminating
//     or gone (Ledger.Gone), or when a live list that started after it was held does not have it (the
//     refresh a refusal makes, which also counts a namespace the ledger somehow missed).
//
// So the ledger may count a slot too long (until the next refusal's refresh), never too short.
package admission
