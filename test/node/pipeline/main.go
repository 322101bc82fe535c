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

// Command pipeline is a CI job as a Pod: with nothing but its ServiceAccount's token (in-cluster
// configuration), it claims a namespace, waits until the claim is Ready, reads the kubeconfig handed
// back in the claim's Secret and, with that kubeconfig only, deploys a workload there and waits until
// the Deployment is Available. It writes one line to /dev/termination-log: "ok <namespace> <server>"
// or "error: ...". Settings: CLAIM (claim name), CLASS (class name, optional), WORKLOAD_IMAGE.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

// workload names the Deployment, its container and its Pods' app label.
const workload = "web"

func main() {
	msg, err := run(context.Background())
	if err != nil {
		msg = "error: " + err.Error()
	}
	fmt.Println(msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
	if err != nil {
		os.Exit(1)
	}
}

func run(ctx context.Context) (string, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return "", err
	}
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		return "", err
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return "", fmt.Errorf("in-cluster config: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	own, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", err
	}
	claim := &tenancyv1alpha1.NamespaceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: os.Getenv("CLAIM"), Namespace: string(own)},
		Spec:       tenancyv1alpha1.NamespaceClaimSpec{ClassName: os.Getenv("CLASS")},
	}
	if err := c.Create(ctx, claim); err != nil {
		return "", fmt.Errorf("create claim: %w", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(claim.Status.Conditions, "Ready"), nil
	}); err != nil {
		return "", fmt.Errorf("claim not Ready: %v", claim.Status.Conditions)
	}
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.CredentialsSecretName}, sec); err != nil {
		return "", fmt.Errorf("read the claim's Secret: %w", err)
	}
	tcfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data["kubeconfig"])
	if err != nil {
		return "", fmt.Errorf("handed kubeconfig: %w", err)
	}
	tenant, err := client.New(tcfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	ns := claim.Status.Namespace
	labels := map[string]string{"app": workload}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: workload, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{
						Name: workload, Image: os.Getenv("WORKLOAD_IMAGE"), ImagePullPolicy: corev1.PullNever,
						Ports:     []corev1.ContainerPort{{ContainerPort: 8080}},
						Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
					}},
				},
			},
		},
	}
	if err := tenant.Create(ctx, dep); err != nil {
		return "", fmt.Errorf("create Deployment with the handed kubeconfig: %w", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := tenant.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, nil
		}
		for _, cond := range dep.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue &&
				dep.Status.AvailableReplicas == *dep.Spec.Replicas {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return "", fmt.Errorf("deployment not Available: %+v", dep.Status)
	}
	return fmt.Sprintf("ok %s %s", ns, tcfg.Host), nil
}
