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

// Package watchcache is what the operator caches and how: the manager's cache options and transforms
// (only labelled objects, interned specs, no managedFields), the side caches of its own (the binding
// index by subject, each namespace's `default` ServiceAccount, active Pods) and the namespace-name
// reuse tracker. Its name keeps clear of client-go's `informers` and `tools/cache`.
package watchcache
