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

package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/nsclaim/nsclaim-operator/internal/claimpolicy"
)

// ReleaseClusterRole reads the release ClusterRole config/rbac ships (release_role.yaml, under
// repoRoot) and names it as the kustomize prefix does (claimpolicy.ReleaseClusterRoleName): an envtest
// suite installs it as an install would, since every claim's release RoleBinding binds it.
func ReleaseClusterRole(repoRoot string) (*rbacv1.ClusterRole, error) {
	path := filepath.Join(repoRoot, "config", "rbac", "release_role.yaml")
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(body, role); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	role.Name = claimpolicy.ReleaseClusterRoleName
	return role, nil
}
