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

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// shippedEnv returns the environment the shipped Deployment (manifest, config/manager/manager.yaml)
// gives the manager, as KEY=VALUE: its literal values, and NSCLAIM_MEMORY_LIMIT from the container's
// memory limit as the Downward API gives it (bytes). Values taken from elsewhere (the pod's
// namespace) are left to the bench, which sets POD_NAMESPACE itself. The CPU limit is not applied: the
// bench runs the manager as a process.
func shippedEnv(manifest string) ([]string, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	for doc := range bytes.SplitSeq(data, []byte("\n---")) {
		d := &appsv1.Deployment{}
		if err := yaml.Unmarshal(doc, d); err != nil || d.Kind != "Deployment" || len(d.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		return containerEnv(&d.Spec.Template.Spec.Containers[0]), nil
	}
	return nil, fmt.Errorf("no Deployment with a container in %s", manifest)
}

// containerEnv is shippedEnv for one container.
func containerEnv(c *corev1.Container) []string {
	var out []string
	for _, v := range c.Env {
		switch {
		case v.ValueFrom == nil:
			out = append(out, v.Name+"="+v.Value)
		case v.ValueFrom.ResourceFieldRef != nil && v.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				out = append(out, fmt.Sprintf("%s=%d", v.Name, q.Value()))
			}
		}
	}
	return out
}

// describeEnv is env for the report, values cut to keep it short.
func describeEnv(env []string) string {
	parts := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if len(v) > 24 {
			v = v[:21] + "..."
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
