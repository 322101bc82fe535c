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

// Package namespaceclass is the class reconciler, the one writer of a NamespaceClass's status: whether
// the operator can provision the class (it may bind every ClusterRole the class names, its Pod Security
// level is allowed, the creator stamp is in force for credentials mode Requester) in the Ready
// condition, and the warm pool's counts the pool reconciler reports (PoolReports) in status.pool. It
// also creates the starting class once at start when the cluster has none (StartingClassCreator).
package namespaceclass
