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

package olm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Monitoring is optional under OLM as it is for manifest installs: the bundle carries no object of the
// Prometheus Operator (monitoring.coreos.com), whose missing kinds would fail OLM's whole install; the
// release's monitoring.yaml carries them (docs/olm.md).

// monitoringCRDs are the Prometheus Operator's CRDs of the objects that the bundle used to carry.
var monitoringCRDs = []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"}

// monitoringObjects lists the files of the bundle directory dir that hold a monitoring.coreos.com object.
func monitoringObjects(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in bundle %s (%v)", dir, err)
	}
	var found []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.HasPrefix(obj.APIVersion, "monitoring.coreos.com/") {
			found = append(found, filepath.Base(f)+" ("+obj.Kind+")")
		}
	}
	return found
}

func TestBundleHasNoMonitoringObjects(t *testing.T) {
	dir := os.Getenv("NSCLAIM_OLM_TO_BUNDLE")
	if dir == "" {
		t.Skip("NSCLAIM_OLM_TO_BUNDLE is not set")
	}
	if found := monitoringObjects(t, dir); len(found) > 0 {
		t.Fatalf("bundle %s carries monitoring.coreos.com objects %v: OLM cannot install it on a cluster without the Prometheus Operator's CRDs", dir, found)
	}
}

// checkNoMonitoringCRDs fails unless the cluster serves none of monitoringCRDs: with
// NSCLAIM_OLM_NO_MONITORING_CRDS=1 the script removed them before the upgrade, so TO_CSV installed and
// ran on a cluster without the Prometheus Operator.
func checkNoMonitoringCRDs(t *testing.T) {
	t.Helper()
	if os.Getenv("NSCLAIM_OLM_NO_MONITORING_CRDS") != "1" {
		return
	}
	for _, name := range monitoringCRDs {
		err := admin.Get(context.Background(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("CRD %s: want not found (the upgrade must run without the Prometheus Operator's CRDs), got %v", name, err)
		}
	}
	t.Logf("%s runs on a cluster without the Prometheus Operator's CRDs", os.Getenv("NSCLAIM_OLM_TO_CSV"))
}
