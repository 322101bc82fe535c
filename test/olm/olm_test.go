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

// Package olm installs nsclaim through OLM, upgrades it while claims are live and uninstalls it, on a
// cluster taken from KUBECONFIG that runs OLM. It is driven by hack/test-olm.sh (a local cluster
// with OLM's operators as processes, a catalog served by `opm serve`, and kwok playing the node) or
// by `make test-e2e-olm` (kind, `operator-sdk run bundle` and `run bundle-upgrade`).
//
// Environment:
//
//	KUBECONFIG                        admin kubeconfig (required)
//	NSCLAIM_OLM_NAMESPACE             namespace the operator is installed in (nsclaim-operator-system)
//	NSCLAIM_OLM_FROM_CSV, _TO_CSV     the CSVs installed first and upgraded to
//	                                  (nsclaim-operator.v0.3.0, nsclaim-operator.v0.4.0)
//	NSCLAIM_OLM_FROM_BUNDLE, _TO_BUNDLE
//	                                  optional: the bundle directories of those CSVs; the CRDs on the
//	                                  cluster must then serve exactly their versions and schemas
//	NSCLAIM_OLM_CATALOG_ADDRESS       host:port of a gRPC catalog serving FROM_CSV; the test then installs
//	                                  through its own CatalogSource, OperatorGroup and Subscription
//	                                  (Manual approval) and approves the InstallPlans itself
//	NSCLAIM_OLM_OFFER_UPGRADE_CMD     with CATALOG_ADDRESS: command after which the catalog offers TO_CSV
//	NSCLAIM_OLM_INSTALL_CMD           without CATALOG_ADDRESS: command that installs FROM_CSV
//	                                  (for example `operator-sdk run bundle`)
//	NSCLAIM_OLM_UPGRADE_CMD           without CATALOG_ADDRESS: command that upgrades to TO_CSV
//	                                  (for example `operator-sdk run bundle-upgrade`)
//	NSCLAIM_OLM_MANAGER_CMD           optional: when the operator's Pods cannot run (no kubelet), a command
//	                                  called as `CMD start NAMESPACE DEPLOYMENT` whenever a CSV has
//	                                  succeeded, to run the manager with that Deployment's identity and
//	                                  environment, and as `CMD stop` once the Deployment is gone
//	NSCLAIM_OLM_BIND_NODE             optional: with no scheduler, the node that the operator's pending
//	                                  Pods are bound to (a kwok node)
//	NSCLAIM_OLM_KUBECONFIG_SERVER     optional, with CATALOG_ADDRESS: the Subscription's config also sets
//	                                  NSCLAIM_KUBECONFIG_SERVER to it, and the kubeconfigs handed to the
//	                                  claims must name it
//	NSCLAIM_OLM_NO_MONITORING_CRDS    optional: "1" when the Prometheus Operator's CRDs are removed before
//	                                  the upgrade; TO_CSV must then succeed and run without them
//	NSCLAIM_OLM_COPIED_CSVS           optional: "disabled" when the OLMConfig "cluster" disables copied
//	                                  CSVs (hack/test-olm.sh applies it): no tenant namespace may hold a
//	                                  copy of the operator's CSV; "enabled" when it does not: every tenant
//	                                  namespace must get one (the cost, measured); unset: only counted
//
// Commands are run with `sh -c`.
package olm

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
)

const (
	packageName   = "nsclaim-operator"
	catalogName   = "nsclaim-olm-test"
	className     = "olm"
	deployTimeout = 5 * time.Minute
	claimTimeout  = 2 * time.Minute
	// subscriptionEnv is set through the Subscription's config and must reach the manager's Deployment.
	subscriptionEnv      = "NSCLAIM_WORKERS"
	subscriptionEnvValue = "3"
)

var (
	ctx    = context.Background()
	scheme = runtime.NewScheme()
	cfg    *rest.Config
	admin  client.Client
	kube   kubernetes.Interface
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	if os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(os.Stderr, "KUBECONFIG is not set: run `make test-olm` (local cluster) or `make test-e2e-olm` (kind)")
		os.Exit(1)
	}
	var err error
	if cfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG")); err == nil {
		if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err == nil {
			kube, err = kubernetes.NewForConfig(cfg)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// installation is the operator as OLM installed it, and the hooks of the environment running it.
type installation struct {
	ns, fromCSV, toCSV string
	catalogAddress     string
	managerCmd         string
	copiedCSVs         string
	kubeconfigServer   string
}

// tenant is what a claim produced, recorded before the upgrade to compare afterwards.
type tenant struct {
	claim                   *tenancyv1alpha1.NamespaceClaim
	namespace               string
	namespaceUID, secretUID types.UID
	token                   string
	tokenExpiresAt          time.Time
	readySince              time.Time // the Ready condition's lastTransitionTime when recorded
}

// TestInstallUpgradeUninstall is the life of one installation: OLM installs FROM_CSV, claims become
// Ready under the identity OLM created, OLM upgrades to TO_CSV while the claims are live, and removing
// the operator through OLM leaves every tenant namespace in place.
func TestInstallUpgradeUninstall(t *testing.T) {
	in := &installation{
		ns:             env("NSCLAIM_OLM_NAMESPACE", "nsclaim-operator-system"),
		fromCSV:        env("NSCLAIM_OLM_FROM_CSV", packageName+".v0.3.0"),
		toCSV:          env("NSCLAIM_OLM_TO_CSV", packageName+".v0.4.0"),
		catalogAddress: os.Getenv("NSCLAIM_OLM_CATALOG_ADDRESS"),
		managerCmd:     os.Getenv("NSCLAIM_OLM_MANAGER_CMD"),
		copiedCSVs:     os.Getenv("NSCLAIM_OLM_COPIED_CSVS"),
	}
	if in.catalogAddress != "" {
		in.kubeconfigServer = os.Getenv("NSCLAIM_OLM_KUBECONFIG_SERVER")
	}
	if node := os.Getenv("NSCLAIM_OLM_BIND_NODE"); node != "" {
		stop := make(chan struct{})
		done := make(chan struct{})
		go bindPendingPods(in.ns, node, stop, done)
		t.Cleanup(func() { close(stop); <-done })
	}

	// Install FROM_CSV.
	if in.catalogAddress != "" {
		in.subscribe(t)
		in.approveInstallPlanFor(t, in.fromCSV)
	} else {
		run(t, "NSCLAIM_OLM_INSTALL_CMD")
	}
	deploy := in.waitSucceeded(t, in.fromCSV)
	in.checkRBAC(t, in.fromCSV)
	if in.catalogAddress != "" {
		in.checkSubscriptionEnv(t, deploy)
	}
	storedVersions := map[string][]string{}
	checkCRDs(t, os.Getenv("NSCLAIM_OLM_FROM_BUNDLE"), storedVersions)
	in.startManager(t, deploy)
	in.checkUpgradeable(t, in.fromCSV)
	t.Logf("%s succeeded; its RBAC is in place and its manager reports to OLM", in.fromCSV)

	// Claims become Ready under the old version, created as its clients would (its fields only).
	class := createOldClass(t)
	requester := createNamespace(t, "olm-ci")
	tenants := make([]*tenant, 0, 4) // three before the upgrade, one after
	tenants = append(tenants,
		oldClaim(t, requester, "before-a", map[string]any{}),
		oldClaim(t, requester, "before-b", map[string]any{"ttl": "2h"}),
		oldClaim(t, requester, "before-c", map[string]any{"labels": map[string]any{"team": "ci"}}))
	old := make([]*storedObject, 0, 1+len(tenants))
	old = append(old, recordStored(t, class))
	for _, tn := range tenants {
		old = append(old, recordStored(t, tn.claim.DeepCopy()))
	}
	managed := managedNamespaces(t)
	leader := in.leader(t)
	in.checkLeaderIsPod(t, deploy, leader)
	in.checkKubeconfigServer(t, tenants)
	t.Logf("claims Ready in %v under leader %s", slices.Sorted(maps.Keys(managed)), leader)

	// OLM upgrades to TO_CSV while the claims are live.
	if in.catalogAddress != "" {
		run(t, "NSCLAIM_OLM_OFFER_UPGRADE_CMD")
		in.approveInstallPlanFor(t, in.toCSV)
	} else {
		run(t, "NSCLAIM_OLM_UPGRADE_CMD")
	}
	deploy = in.waitSucceeded(t, in.toCSV)
	waitGone(t, olmObject(csvGVK, in.ns, in.fromCSV, nil))
	checkCRDs(t, os.Getenv("NSCLAIM_OLM_TO_BUNDLE"), storedVersions)
	checkNoMonitoringCRDs(t)
	in.checkRBAC(t, in.toCSV)
	in.startManager(t, deploy)
	in.checkUpgradeable(t, in.toCSV)
	t.Logf("upgraded to %s", in.toCSV)

	// Claims, credentials and namespaces survived; the new version reconciles old and new claims.
	for _, tn := range tenants {
		checkSurvived(t, tn)
	}
	g := NewWithT(t)
	g.Expect(managedNamespaces(t)).To(Equal(managed), "no tenant namespace may be deleted or added by the upgrade")
	extendTTL(t, tenants[0].claim, 3*time.Hour)
	oldTenants := tenants
	tenants = append(tenants, claimAndWait(t, requester, "after"))
	g.Expect(in.leader(t)).NotTo(Equal(leader), "the manager of %s must have taken over", in.toCSV)
	in.checkLeaderIsPod(t, deploy, in.leader(t))
	// The new manager has reconciled the old claims (its informers list them at start; the raised TTL
	// and the new claim are done): none got a new token or namespace. Then what the old CRDs stored is
	// written back through the new ones, which reconciles each claim again.
	flapped := 0
	for _, tn := range oldTenants {
		checkNotReissued(t, tn)
		if readySince(t, tn) != tn.readySince {
			flapped++
		}
	}
	t.Logf("old claims whose Ready condition left True and came back during the upgrade (lastTransitionTime moved): %d of %d", flapped, len(oldTenants))
	for _, o := range old {
		writeBack(t, o)
	}
	for _, tn := range oldTenants {
		checkSurvived(t, tn)
		checkNotReissued(t, tn)
	}
	t.Logf("after the upgrade: claims, Secrets, tokens and namespaces unchanged, the old objects written back, a new claim Ready under leader %s", in.leader(t))
	in.checkCopiedCSVs(t, managedNamespaces(t))

	// Uninstall through OLM: delete the Subscription and the CSV.
	in.uninstall(t, deploy)
	for _, tn := range tenants {
		checkSurvived(t, tn)
	}
	for _, crd := range crdNames {
		g.Expect(admin.Get(ctx, client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), "OLM must not delete the CRDs")
	}
	g.Expect(managedNamespaces(t)).To(HaveLen(len(tenants)))
	t.Log("uninstalled through OLM: every claim, Secret and tenant namespace is still there")
}

// leaderElectionID is the name of the manager's leader election Lease (cmd/main.go).
const leaderElectionID = "nsclaim.tenancy.nsclaim.dev"

// leader returns the holder of the manager's leader election Lease, once there is one.
func (in *installation) leader(t *testing.T) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: in.ns, Name: leaderElectionID}, lease)).To(Succeed())
		g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
	return *lease.Spec.HolderIdentity
}

// checkLeaderIsPod checks, where the manager runs in the Pods of OLM's Deployment (no
// NSCLAIM_OLM_MANAGER_CMD), that the leader election Lease is held by one of them: a Pod of deploy,
// scheduled to a node, Running and Ready. controller-runtime's identity is "<hostname>_<uuid>", and a
// Pod's hostname is its name.
func (in *installation) checkLeaderIsPod(t *testing.T, deploy *appsv1.Deployment, holder string) {
	t.Helper()
	if in.managerCmd != "" {
		return
	}
	g := NewWithT(t)
	podName, _, found := strings.Cut(holder, "_")
	g.Expect(found).To(BeTrue(), "Lease holder %q is not <hostname>_<uuid>", holder)
	pod := &corev1.Pod{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: deploy.Namespace, Name: podName}, pod)).To(Succeed(),
		"the Lease holder %q must be a Pod in %s", holder, deploy.Namespace)
	selector, err := metav1.LabelSelectorAsSelector(deploy.Spec.Selector)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(selector.Matches(labels.Set(pod.Labels))).To(BeTrue(), "Pod %s is not one of Deployment %s's", podName, deploy.Name)
	g.Expect(pod.Spec.NodeName).NotTo(BeEmpty())
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
	ready := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	g.Expect(ready).To(BeTrue(), "the leader's Pod %s must be Ready", podName)
	t.Logf("the leader election Lease is held by Pod %s on node %s (image %s)", podName, pod.Spec.NodeName, pod.Spec.Containers[0].Image)
}

// checkUpgradeable waits until the manager has set Upgradeable=True on the OperatorCondition OLM
// created for csv: the manager found it through OLM's environment and may write it with OLM's RBAC.
func (in *installation) checkUpgradeable(t *testing.T, csv string) {
	t.Helper()
	cond := olmObject(operatorConditionGVK, in.ns, csv, nil)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(cond), cond)).To(Succeed())
		conditions, _, _ := unstructured.NestedSlice(cond.Object, "spec", "conditions")
		status := ""
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Upgradeable" {
				status, _ = m["status"].(string)
			}
		}
		g.Expect(status).To(Equal("True"), "OperatorCondition %s: %v", csv, conditions)
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
}

// run runs the command in the environment variable key with sh -c; it fails the test when the variable
// is empty or the command fails.
func run(t *testing.T, key string, args ...string) {
	t.Helper()
	command := os.Getenv(key)
	if command == "" {
		t.Fatalf("%s is not set", key)
	}
	cmd := exec.Command("sh", append([]string{"-c", command + ` "$@"`, "sh"}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", key, strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

// OLM's kinds, used as unstructured objects: the typed API package would add logrus to the module.
var (
	catalogSourceGVK     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
	operatorGroupGVK     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"}
	subscriptionGVK      = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	installPlanGVK       = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}
	csvGVK               = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	operatorConditionGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v2", Kind: "OperatorCondition"}
	olmConfigGVK         = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OLMConfig"}
)

func olmObject(gvk schema.GroupVersionKind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func olmList(t *testing.T, gvk schema.GroupVersionKind, namespace string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	NewWithT(t).Expect(admin.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	return list.Items
}

// csvInstall is the part of a CSV's install strategy that the test reads.
type csvInstall struct {
	Deployments []struct {
		Name string `json:"name"`
	} `json:"deployments"`
	Permissions        []csvPermissions `json:"permissions"`
	ClusterPermissions []csvPermissions `json:"clusterPermissions"`
}

type csvPermissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// subscribe creates a CatalogSource for the catalog address, an AllNamespaces OperatorGroup and a
// Subscription with Manual approval that starts at FROM_CSV, with an environment variable in its config.
func (in *installation) subscribe(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	g.Expect(admin.Create(ctx, olmObject(catalogSourceGVK, in.ns, catalogName, map[string]any{
		"sourceType": "grpc", "address": in.catalogAddress, "displayName": "nsclaim (test)",
	}))).To(Succeed())
	// No targetNamespaces: the OperatorGroup selects all namespaces.
	g.Expect(admin.Create(ctx, olmObject(operatorGroupGVK, in.ns, packageName, map[string]any{}))).To(Succeed())
	g.Expect(admin.Create(ctx, olmObject(subscriptionGVK, in.ns, packageName, map[string]any{
		"source": catalogName, "sourceNamespace": in.ns, "name": packageName, "channel": "stable",
		"startingCSV": in.fromCSV, "installPlanApproval": "Manual",
		"config": map[string]any{"env": in.subscriptionEnv()},
	}))).To(Succeed())
}

// subscriptionEnv is the environment the Subscription's config gives the manager.
func (in *installation) subscriptionEnv() []any {
	env := []any{map[string]any{"name": subscriptionEnv, "value": subscriptionEnvValue}}
	if in.kubeconfigServer != "" {
		env = append(env, map[string]any{"name": "NSCLAIM_KUBECONFIG_SERVER", "value": in.kubeconfigServer})
	}
	return env
}

// checkKubeconfigServer checks, when the Subscription set NSCLAIM_KUBECONFIG_SERVER, that every
// tenant's handed kubeconfig names that server: the setting reached the manager in OLM's Pod.
func (in *installation) checkKubeconfigServer(t *testing.T, tenants []*tenant) {
	t.Helper()
	if in.kubeconfigServer == "" {
		return
	}
	g := NewWithT(t)
	for _, tn := range tenants {
		secret := &corev1.Secret{}
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: tn.claim.Namespace, Name: tn.claim.Status.CredentialsSecretName}, secret)).To(Succeed())
		kubeconfig, err := clientcmd.Load(secret.Data["kubeconfig"])
		g.Expect(err).NotTo(HaveOccurred(), "the kubeconfig of claim %s", client.ObjectKeyFromObject(tn.claim))
		g.Expect(kubeconfig.Clusters).NotTo(BeEmpty())
		for name, cluster := range kubeconfig.Clusters {
			g.Expect(cluster.Server).To(Equal(in.kubeconfigServer), "cluster %q of the kubeconfig of claim %s", name, client.ObjectKeyFromObject(tn.claim))
		}
	}
	t.Logf("the kubeconfigs handed to %d claims name %s (NSCLAIM_KUBECONFIG_SERVER from the Subscription's config)", len(tenants), in.kubeconfigServer)
}

// approveInstallPlanFor approves the InstallPlan that the Subscription references once it installs csv
// and waits until OLM has carried it out. OLM may replace the plan it references (for example after a
// conflicting update), so the plan is looked up again on every try and whichever plan is current is
// approved.
func (in *installation) approveInstallPlanFor(t *testing.T, csv string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		sub := olmObject(subscriptionGVK, in.ns, packageName, nil)
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(sub), sub)).To(Succeed())
		name, _, _ := unstructured.NestedString(sub.Object, "status", "installPlanRef", "name")
		g.Expect(name).NotTo(BeEmpty(), "the Subscription references no InstallPlan yet")
		plan := olmObject(installPlanGVK, in.ns, name, nil)
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
		names, _, _ := unstructured.NestedStringSlice(plan.Object, "spec", "clusterServiceVersionNames")
		g.Expect(names).To(ContainElement(csv), "InstallPlan %s", name)
		approval, _, _ := unstructured.NestedString(plan.Object, "spec", "approval")
		g.Expect(approval).To(Equal("Manual"))
		if approved, _, _ := unstructured.NestedBool(plan.Object, "spec", "approved"); !approved {
			g.Expect(admin.Patch(ctx, plan, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"approved":true}}`)))).To(Succeed())
		}
		phase, _, _ := unstructured.NestedString(plan.Object, "status", "phase")
		g.Expect(phase).To(Equal("Complete"), "InstallPlan %s", name)
	}).WithTimeout(deployTimeout).WithPolling(2 * time.Second).Should(Succeed())
}

// getCSV returns a CSV and its install strategy.
func (in *installation) getCSV(g Gomega, name string) (*unstructured.Unstructured, *csvInstall) {
	csv := olmObject(csvGVK, in.ns, name, nil)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(csv), csv)).To(Succeed())
	spec, _, _ := unstructured.NestedMap(csv.Object, "spec", "install", "spec")
	install := &csvInstall{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(spec, install)).To(Succeed())
	return csv, install
}

// waitSucceeded waits until csv reaches Succeeded and its Deployment is available, and returns the
// Deployment.
func (in *installation) waitSucceeded(t *testing.T, csvName string) *appsv1.Deployment {
	t.Helper()
	g := NewWithT(t)
	var install *csvInstall
	g.Eventually(func(g Gomega) {
		var csv *unstructured.Unstructured
		csv, install = in.getCSV(g, csvName)
		phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
		message, _, _ := unstructured.NestedString(csv.Object, "status", "message")
		g.Expect(phase).To(Equal("Succeeded"), message)
	}).WithTimeout(deployTimeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(install.Deployments).To(HaveLen(1))
	deploy := &appsv1.Deployment{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: in.ns, Name: install.Deployments[0].Name}, deploy)).To(Succeed())
	g.Expect(deploy.Status.AvailableReplicas).To(BeNumerically(">=", 1))
	return deploy
}

// checkRBAC checks, with SubjectAccessReviews as the CSV's ServiceAccount, that every rule of the
// CSV's permissions and clusterPermissions is granted by the RBAC OLM created, and that nothing beyond
// them is: the operator is not a cluster admin.
func (in *installation) checkRBAC(t *testing.T, csvName string) {
	t.Helper()
	g := NewWithT(t)
	_, install := in.getCSV(g, csvName)
	g.Expect(install.ClusterPermissions).NotTo(BeEmpty())
	check := func(perms []csvPermissions, namespace string) {
		for _, p := range perms {
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: in.ns, Name: p.ServiceAccountName}, &corev1.ServiceAccount{})).To(Succeed())
			user := "system:serviceaccount:" + in.ns + ":" + p.ServiceAccountName
			for _, rule := range p.Rules {
				for _, attrs := range ruleAttributes(rule, namespace) {
					g.Expect(allowed(t, user, attrs)).To(BeTrue(), "%s should be allowed %+v (CSV %s)", user, attrs, csvName)
				}
			}
		}
	}
	check(install.Permissions, in.ns)
	check(install.ClusterPermissions, "")
	user := "system:serviceaccount:" + in.ns + ":" + install.ClusterPermissions[0].ServiceAccountName
	for _, attrs := range []authorizationv1.ResourceAttributes{
		// Creating ClusterRoleBindings is allowed (each tenant's namespace watcher); the fence admits
		// only that shape (test/security).
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "bind", Name: "cluster-admin"},
		{Resource: "users", Verb: "impersonate"},
		{Resource: "secrets", Verb: "get", Namespace: "kube-system"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"},
		{Resource: "nodes", Verb: "delete"},
		{Group: "apps", Resource: "deployments", Verb: "create", Namespace: "default"},
	} {
		g.Expect(allowed(t, user, attrs)).To(BeFalse(), "%s should not be allowed %+v", user, attrs)
	}
}

// ruleAttributes expands a policy rule into one set of resource attributes per group, resource, verb and
// resource name. Rules for non-resource URLs are skipped.
func ruleAttributes(rule rbacv1.PolicyRule, namespace string) []authorizationv1.ResourceAttributes {
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	out := make([]authorizationv1.ResourceAttributes, 0, len(rule.APIGroups)*len(rule.Resources)*len(rule.Verbs)*len(names))
	for _, group := range rule.APIGroups {
		for _, res := range rule.Resources {
			resource, sub, _ := strings.Cut(res, "/")
			for _, verb := range rule.Verbs {
				for _, name := range names {
					out = append(out, authorizationv1.ResourceAttributes{
						Namespace: namespace, Group: group, Resource: resource, Subresource: sub, Verb: verb, Name: name,
					})
				}
			}
		}
	}
	return out
}

func allowed(t *testing.T, user string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &attrs,
	}}
	NewWithT(t).Expect(admin.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

// checkSubscriptionEnv checks that the environment set in the Subscription's config reached the
// manager's container.
func (in *installation) checkSubscriptionEnv(t *testing.T, deploy *appsv1.Deployment) {
	t.Helper()
	var manager *corev1.Container
	for i := range deploy.Spec.Template.Spec.Containers {
		if deploy.Spec.Template.Spec.Containers[i].Name == "manager" {
			manager = &deploy.Spec.Template.Spec.Containers[i]
		}
	}
	g := NewWithT(t)
	g.Expect(manager).NotTo(BeNil())
	g.Expect(manager.Env).To(ContainElement(corev1.EnvVar{Name: subscriptionEnv, Value: subscriptionEnvValue}))
}

// startManager runs NSCLAIM_OLM_MANAGER_CMD start, when set, for the Deployment of the CSV that has
// just succeeded.
func (in *installation) startManager(t *testing.T, deploy *appsv1.Deployment) {
	t.Helper()
	if in.managerCmd != "" {
		run(t, "NSCLAIM_OLM_MANAGER_CMD", "start", deploy.Namespace, deploy.Name)
	}
}

// uninstall deletes the Subscription and the CSV, as OLM documents, waits until OLM has removed the
// Deployment and stops the manager process when there is one.
func (in *installation) uninstall(t *testing.T, deploy *appsv1.Deployment) {
	t.Helper()
	g := NewWithT(t)
	found := false
	for _, sub := range olmList(t, subscriptionGVK, in.ns) {
		if pkg, _, _ := unstructured.NestedString(sub.Object, "spec", "name"); pkg == packageName {
			found = true
			g.Expect(admin.Delete(ctx, &sub)).To(Succeed())
		}
	}
	g.Expect(found).To(BeTrue(), "no Subscription for %s in %s", packageName, in.ns)
	g.Expect(admin.Delete(ctx, olmObject(csvGVK, in.ns, in.toCSV, nil))).To(Succeed())
	waitGone(t, deploy)
	if in.managerCmd != "" {
		run(t, "NSCLAIM_OLM_MANAGER_CMD", "stop")
	}
}

func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).WithTimeout(deployTimeout).WithPolling(time.Second).Should(BeTrue(), "%T %s still exists", obj, client.ObjectKeyFromObject(obj))
}

func createNamespace(t *testing.T, name string) string {
	t.Helper()
	NewWithT(t).Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// claimAndWait creates a claim, waits until it is Ready and checks that its token works in its
// namespace and nowhere else.
func claimAndWait(t *testing.T, namespace, name string) *tenant {
	t.Helper()
	g := NewWithT(t)
	claim := &tenancyv1alpha1.NamespaceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       tenancyv1alpha1.NamespaceClaimSpec{ClassName: className},
	}
	g.Expect(admin.Create(ctx, claim)).To(Succeed())
	return waitReady(t, claim)
}

// waitReady waits until the claim is Ready, records its namespace, Secret and token, and checks that
// the token works in its namespace and nowhere else.
func waitReady(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim) *tenant {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue(), "conditions: %+v", claim.Status.Conditions)
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
	tn := &tenant{claim: claim, namespace: claim.Status.Namespace}
	tn.readySince = meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition).LastTransitionTime.Time
	g.Expect(tn.namespace).NotTo(BeEmpty())
	g.Expect(claim.Status.TokenExpiresAt).NotTo(BeNil())
	tn.tokenExpiresAt = claim.Status.TokenExpiresAt.Time
	ns := &corev1.Namespace{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: claim.Status.Namespace}, ns)).To(Succeed())
	tn.namespaceUID = ns.UID
	secret := &corev1.Secret{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.CredentialsSecretName}, secret)).To(Succeed())
	tn.secretUID, tn.token = secret.UID, string(secret.Data["token"])
	g.Expect(tn.token).NotTo(BeEmpty())
	checkToken(t, tn)
	return tn
}

// secretToken returns the token in the tenant's credentials Secret now.
func secretToken(g Gomega, tn *tenant) string {
	secret := &corev1.Secret{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: tn.claim.Namespace, Name: tn.claim.Status.CredentialsSecretName}, secret)).To(Succeed())
	g.Expect(secret.UID).To(Equal(tn.secretUID))
	return string(secret.Data["token"])
}

// checkToken checks that the tenant's token may create Deployments in its namespace only.
func checkToken(t *testing.T, tn *tenant) {
	t.Helper()
	g := NewWithT(t)
	tcfg := rest.AnonymousClientConfig(cfg)
	tcfg.BearerToken = tn.token
	tc, err := kubernetes.NewForConfig(tcfg)
	g.Expect(err).NotTo(HaveOccurred())
	can := func(namespace string) bool {
		review, err := tc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Group: "apps", Resource: "deployments", Verb: "create",
			}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "the token of claim %s must authenticate", client.ObjectKeyFromObject(tn.claim))
		return review.Status.Allowed
	}
	g.Expect(can(tn.claim.Status.Namespace)).To(BeTrue())
	g.Expect(can(tn.claim.Namespace)).To(BeFalse())
}

// checkSurvived checks that the claim, its Secret and its namespace are the same objects as before
// (same UIDs, not being deleted), the claim is Ready (a manager that has just started holds claims at
// Pending until its first check of the admission fence, so Ready is waited for) and the token still
// works.
func checkSurvived(t *testing.T, tn *tenant) {
	t.Helper()
	g := NewWithT(t)
	claim := &tenancyv1alpha1.NamespaceClaim{}
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(tn.claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue(), "conditions: %+v", claim.Status.Conditions)
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
	g.Expect(claim.UID).To(Equal(tn.claim.UID))
	g.Expect(claim.DeletionTimestamp).To(BeNil())
	ns := &corev1.Namespace{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Name: tn.claim.Status.Namespace}, ns)).To(Succeed())
	g.Expect(ns.UID).To(Equal(tn.namespaceUID))
	g.Expect(ns.DeletionTimestamp).To(BeNil())
	secret := &corev1.Secret{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: tn.claim.Namespace, Name: tn.claim.Status.CredentialsSecretName}, secret)).To(Succeed())
	g.Expect(secret.UID).To(Equal(tn.secretUID))
	checkToken(t, tn)
}

// extendTTL raises a claim's TTL and waits until the operator has moved its expiry accordingly: proof
// that the running version reconciles claims created before it.
func extendTTL(t *testing.T, claim *tenancyv1alpha1.NamespaceClaim, ttl time.Duration) {
	t.Helper()
	g := NewWithT(t)
	current := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.TTL = &metav1.Duration{Duration: ttl}
	g.Expect(admin.Patch(ctx, current, patch)).To(Succeed())
	want := current.CreationTimestamp.Add(ttl)
	g.Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(claim), current)).To(Succeed())
		g.Expect(current.Status.ObservedGeneration).To(Equal(current.Generation))
		g.Expect(current.Status.ExpiresAt).NotTo(BeNil())
		g.Expect(current.Status.ExpiresAt.Time).To(BeTemporally("~", want, time.Second))
	}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
}

// managedNamespaces returns the names and UIDs of the namespaces nsclaim manages.
func managedNamespaces(t *testing.T) map[string]types.UID {
	t.Helper()
	list := &corev1.NamespaceList{}
	NewWithT(t).Expect(admin.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue})).To(Succeed())
	out := map[string]types.UID{}
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			out[ns.Name] = ns.UID
		}
	}
	return out
}

// bindPendingPods plays the scheduler for a cluster without one: every pending, unscheduled Pod in
// namespace is bound to node, where kwok marks it Running.
func bindPendingPods(namespace, node string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		if err != nil {
			continue
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil {
				continue
			}
			_ = kube.CoreV1().Pods(namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: namespace, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
		}
	}
}

// copiedFromLabel marks the copies of a CSV that OLM writes into every namespace an AllNamespaces
// OperatorGroup targets, unless the OLMConfig "cluster" sets spec.features.disableCopiedCSVs.
const copiedFromLabel = "olm.copiedFrom"

// copiedCSVs returns the copied CSVs in each of namespaces and their total size (JSON bytes).
func copiedCSVs(t *testing.T, namespaces map[string]types.UID) (map[string]int, int) {
	t.Helper()
	counts, size := map[string]int{}, 0
	for ns := range namespaces {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(csvGVK.GroupVersion().WithKind("ClusterServiceVersionList"))
		NewWithT(t).Expect(admin.List(ctx, list, client.InNamespace(ns), client.HasLabels{copiedFromLabel})).To(Succeed())
		counts[ns] = len(list.Items)
		for i := range list.Items {
			raw, err := list.Items[i].MarshalJSON()
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			size += len(raw)
		}
	}
	return counts, size
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// checkCopiedCSVs counts the objects OLM writes into the tenant namespaces nsclaim created: copies of
// the operator's CSV (label olm.copiedFrom), one per namespace per AllNamespaces operator by default.
// With NSCLAIM_OLM_COPIED_CSVS=disabled, OLM must report through the OLMConfig's DisabledCopiedCSVs
// condition that copying is off and no copy is left, and no tenant namespace may hold one for 15s;
// with "enabled", every tenant namespace must receive its copy.
func (in *installation) checkCopiedCSVs(t *testing.T, tenants map[string]types.UID) {
	t.Helper()
	g := NewWithT(t)
	switch in.copiedCSVs {
	case "disabled":
		cfg := olmObject(olmConfigGVK, "", "cluster", nil)
		g.Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(cfg), cfg)).To(Succeed())
			disabled, _, _ := unstructured.NestedBool(cfg.Object, "spec", "features", "disableCopiedCSVs")
			g.Expect(disabled).To(BeTrue(), "OLMConfig cluster must set spec.features.disableCopiedCSVs")
			conditions, _, _ := unstructured.NestedSlice(cfg.Object, "status", "conditions")
			status := ""
			for _, c := range conditions {
				if m, ok := c.(map[string]any); ok && m["type"] == "DisabledCopiedCSVs" {
					status, _ = m["status"].(string)
				}
			}
			g.Expect(status).To(Equal("True"), "OLMConfig cluster conditions: %v", conditions)
		}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
		g.Consistently(func(g Gomega) {
			counts, _ := copiedCSVs(t, tenants)
			g.Expect(total(counts)).To(BeZero(), "copied CSVs in tenant namespaces: %v", counts)
		}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
	case "enabled":
		g.Eventually(func(g Gomega) {
			counts, _ := copiedCSVs(t, tenants)
			for ns, c := range counts {
				g.Expect(c).To(BeNumerically(">=", 1), "no copied CSV in %s yet", ns)
			}
		}).WithTimeout(claimTimeout).WithPolling(time.Second).Should(Succeed())
	}
	counts, size := copiedCSVs(t, tenants)
	t.Logf("copied CSVs (copies of the operator's CSV, label %s) in the %d tenant namespaces nsclaim created: %d, %d bytes; per namespace: %v (NSCLAIM_OLM_COPIED_CSVS=%q)",
		copiedFromLabel, len(tenants), total(counts), size, counts, in.copiedCSVs)
}
