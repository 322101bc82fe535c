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

package namespaceclaim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/configmaprequest"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespacebudget"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceorphan"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespacepool"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	"github.com/nsclaim/nsclaim-operator/internal/testenv"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
)

// The ConfigMap protocol runs in the suite with the shell operator's defaults and its own class.
const (
	requestsNamespace = configmaprequest.DefaultNamespace
	requestsClass     = "requests"
	// seedNamespace is the suite's seed namespace (docs/seeds.md).
	seedNamespace = "nsclaim-seeds"
)

// The suite runs the real reconciler in a real manager against envtest's kube-apiserver and etcd, and
// the real kube-controller-manager of KUBEBUILDER_ASSETS with the controllers a claim's namespace
// depends on (controllerManagerControllers). Assertions read through an uncached client.
var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8s       client.Client
	testClock = &offsetClock{}
	// controlPlaneStarted is when the suite started its API server (see NewNamespaceReuse).
	controlPlaneStarted time.Time
	scheme              = runtime.NewScheme()
	mgrCancel           context.CancelFunc
	mgrDone             chan struct{}
	nameSeq             atomic.Int64
)

// envtestUnavailable says why the envtest suite cannot run (KUBEBUILDER_ASSETS unset, or the control
// plane did not start); empty when it runs. The pure tests of the package run either way.
var envtestUnavailable string

// requireEnvtest skips the calling test when the envtest control plane is not running, with the reason
// naming KUBEBUILDER_ASSETS, or fails it when NSCLAIM_REQUIRE_ENVTEST is set (testenv.Unavailable, the
// one envtest gate). Every test that talks to the API server calls it first.
func requireEnvtest(t *testing.T) {
	t.Helper()
	testenv.Unavailable(t, envtestUnavailable)
}

// TestMain starts envtest's kube-apiserver and etcd with the generated CRDs, kube-controller-manager and
// the manager, runs the tests and stops them. Without KUBEBUILDER_ASSETS, or if the control plane
// (kube-controller-manager included) does not start, it runs the tests anyway: the envtest tests skip
// themselves (requireEnvtest) and the pure ones run.
func TestMain(m *testing.M) {
	ctrl.SetLogger(observeReconciles(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel()))))
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	if err := startEnvtest(); err != nil {
		envtestUnavailable = err.Error()
		fmt.Fprintln(os.Stderr, "envtest tests skipped:", envtestUnavailable)
		os.Exit(m.Run())
	}
	if err := startControllerManager(); err != nil {
		_ = testEnv.Stop()
		envtestUnavailable = err.Error()
		fmt.Fprintln(os.Stderr, "envtest tests skipped:", envtestUnavailable)
		os.Exit(m.Run())
	}
	startManager()
	code := m.Run()
	if err := finalInvariants(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	stopManager()
	stopControllerManager()
	_ = os.RemoveAll(controllerManagerDir)
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// startEnvtest starts the control plane in KUBEBUILDER_ASSETS with the generated CRDs, sets cfg and
// k8s, and creates testRole and the shipped release ClusterRole. It stops what it started if a later step fails.
func startEnvtest() error {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return fmt.Errorf("KUBEBUILDER_ASSETS is not set: run `make test-unit`, which builds the control plane and sets it")
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	controlPlaneStarted = time.Now()
	if cfg, err = testEnv.Start(); err != nil {
		return fmt.Errorf("the control plane in KUBEBUILDER_ASSETS=%s did not start: %w", assets, err)
	}
	stop := func(err error) error {
		_ = testEnv.Stop()
		return err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return stop(fmt.Errorf("client for the control plane in KUBEBUILDER_ASSETS=%s: %w", assets, err))
	}
	// The suite's kube-controller-manager does not run the clusterrole-aggregation controller, so the
	// built-in edit, view and admin roles are empty here; classes in this suite bind a role with
	// explicit rules instead.
	if err := k8s.Create(context.Background(), testRole()); err != nil {
		return stop(fmt.Errorf("creating test ClusterRole in the control plane of KUBEBUILDER_ASSETS=%s: %w", assets, err))
	}
	release, err := testenv.ReleaseClusterRole(filepath.Join("..", "..", ".."))
	if err == nil {
		err = k8s.Create(context.Background(), release)
	}
	if err != nil {
		return stop(fmt.Errorf("creating the release ClusterRole in the control plane of KUBEBUILDER_ASSETS=%s: %w", assets, err))
	}
	return nil
}

// controllerManagerControllers are the kube-controller-manager controllers the suite runs: the ones a
// claim's namespace depends on (its `default` ServiceAccount, its quota's status) and the ones that
// delete what a deleted namespace or owner leaves. None of them needs a signing key.
var controllerManagerControllers = []string{
	"serviceaccount-controller", "resourcequota-controller", "garbage-collector-controller", "namespace-controller",
}

// controllerManagerProcess is a kube-controller-manager started by the tests.
type controllerManagerProcess struct {
	cmd    *exec.Cmd
	exited <-chan struct{}
}

// controllerManager is the suite's kube-controller-manager; nil when stopped. controllerManagerDir
// holds its kubeconfig and log.
var (
	controllerManager    *controllerManagerProcess
	controllerManagerDir string
)

// startControllerManager starts the suite's kube-controller-manager against its envtest control plane
// (stopControllerManager stops it; a test may stop and start it again).
func startControllerManager() error {
	if controllerManagerDir == "" {
		dir, err := os.MkdirTemp("", "nsclaim-kcm-")
		if err != nil {
			return err
		}
		controllerManagerDir = dir
	}
	p, err := runControllerManager(testEnv, k8s, controllerManagerDir)
	if err != nil {
		return err
	}
	controllerManager = p
	return nil
}

// stopControllerManager stops the suite's kube-controller-manager.
func stopControllerManager() {
	if controllerManager != nil {
		controllerManager.stop()
		controllerManager = nil
	}
}

// startControllerManagerFor runs a kube-controller-manager for a test's own envtest control plane
// (env, with the admin client c) until the test ends.
func startControllerManagerFor(t *testing.T, env *envtest.Environment, c client.Client) {
	t.Helper()
	p, err := runControllerManager(env, c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
}

// runControllerManager starts kube-controller-manager from KUBEBUILDER_ASSETS against env's API
// server, as an admin user of it (kubeconfig and log in dir), and waits until its serviceaccount
// controller made the `default` ServiceAccount of namespace default (the controllers run once it has).
func runControllerManager(env *envtest.Environment, c client.Client, dir string) (*controllerManagerProcess, error) {
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kube-controller-manager is not in KUBEBUILDER_ASSETS (the suite runs its serviceaccount, resourcequota, garbage-collector and namespace controllers): %w", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		user, err := env.AddUser(envtest.User{Name: "nsclaim-test-kcm", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, fmt.Errorf("adding the kube-controller-manager user to envtest: %w", err)
		}
		data, err := user.KubeConfig()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			return nil, err
		}
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "kube-controller-manager.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllerManagerControllers, ","),
		"--secure-port=0",
		"--leader-elect=false",
		"--profiling=false",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p := &controllerManagerProcess{cmd: cmd, exited: exited}
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Get(context.Background(), client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("kube-controller-manager did not create ServiceAccount default/default within a minute (log: %s): %w", logFile.Name(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops kube-controller-manager and waits for it to exit.
func (p *controllerManagerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func zapLevel() zapcore.Level {
	if os.Getenv("NSCLAIM_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// operatorNamespace is where the suite's operator keeps its ownership key, as cmd/main.go does in its
// own namespace.
const operatorNamespace = "nsclaim-operator-system"

// ownershipKey is the suite operator's ownership key (ownership.LoadOrCreateKey, made by the first
// startManager and read again by every restart); keyCreated is when it was made.
var (
	ownershipKey *ownership.Key
	keyCreated   time.Time
)

// verifier returns the ownership verifier of the suite's operator, writing through c.
func verifier(c client.Client) *ownership.Verifier {
	return &ownership.Verifier{Key: ownershipKey, KeyCreated: keyCreated, Client: c}
}

// loadOwnershipKey makes the operator's namespace and its ownership key, or reads them.
func loadOwnershipKey() {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		panic(err)
	}
	if ownershipKey, keyCreated, err = ownership.LoadOrCreateKey(context.Background(), c, operatorNamespace); err != nil {
		panic(err)
	}
}

// startManager runs a manager with the reconciler as cmd/main.go wires it (same cache options).
func startManager() {
	loadOwnershipKey()
	// The suite's API server started empty: nothing was deleted before it.
	nameReuse := watchcache.NewNamespaceReuse(testClock, controlPlaneStarted)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   watchcache.CacheOptions(requestsNamespace, nameReuse),
		// The suite restarts the manager to prove a restart issues no token.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		panic(err)
	}
	bindings, defaultSAs, err := watchcache.AddSideCaches(mgr, cfg, scheme)
	if err != nil {
		panic(err)
	}
	activePods, err := watchcache.AddActivePods(mgr, cfg, scheme)
	if err != nil {
		panic(err)
	}
	seedCaches, err := watchcache.AddSeeds(mgr, cfg, scheme, seedNamespace)
	if err != nil {
		panic(err)
	}
	protocol, err := configmaprequest.New(requestsNamespace, configmaprequest.DefaultPatterns, configmaprequest.DefaultIgnored, requestsClass, "")
	if err != nil {
		panic(err)
	}
	owns := verifier(mgr.GetClient())
	owns.Recorder = mgr.GetEventRecorder("nsclaim")
	r := &NamespaceClaimReconciler{
		Ownership:                owns,
		Bindings:                 bindings,
		DefaultServiceAccounts:   defaultSAs,
		ActivePods:               activePods,
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Recorder:                 mgr.GetEventRecorder("nsclaim"),
		Clock:                    testClock,
		Endpoint:                 credentials.Endpoint{Server: cfg.Host, CAData: cfg.CAData},
		SelfTestConcurrency:      8,
		MaxConcurrentReconciles:  4,
		Requests:                 protocol,
		CredentialsCheckInterval: time.Hour,
		NameReuse:                nameReuse,
		Seeds:                    seedCaches,
		SeedNamespace:            seedNamespace,
		// Short, so that a tenant's change of a Secret copy is put back within the test's wait.
		SeedResync: 2 * time.Second,
		// envtest runs no admission fence; the pool's own guard against forged pooled namespaces is
		// the fence's label guard, tested in test/security and test/e2e.
		PoolWithoutFence: true,
		Pool: &namespacepool.Handout{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("nsclaim"),
			DefaultServiceAccounts: defaultSAs, NameReuse: nameReuse, Bindings: bindings, Ownership: owns},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := (&namespaceorphan.OrphanReconciler{Ownership: owns, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("nsclaim")}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	pools := namespaceclass.NewPoolReports()
	if err := (&namespacepool.PoolReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("nsclaim"),
		DefaultServiceAccounts: defaultSAs, NameReuse: nameReuse, ClaimsBusy: r.Busy, RefillRate: 50, Ownership: owns, Reports: pools}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := (&namespaceclass.NamespaceClassReconciler{Client: mgr.GetClient(), Pools: pools}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	if err := (&namespacebudget.BudgetReconciler{Client: mgr.GetClient(), Ownership: owns}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	cr := &configmaprequest.ConfigMapRequestReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("nsclaim"), Protocol: protocol}
	if err := cr.SetupWithManager(mgr); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgrCancel, mgrDone = cancel, make(chan struct{})
	go func() {
		defer close(mgrDone)
		if err := mgr.Start(ctx); err != nil {
			panic(err)
		}
	}()
}

func stopManager() {
	mgrCancel()
	<-mgrDone
}

// testRoleName is a ClusterRole like edit, with its rules spelled out.
const testRoleName = "nsclaim-test-edit"

func testRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: testRoleName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "services"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
		},
	}
}

// uniq returns a name unique within the test run.
func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }

// --- fixtures --------------------------------------------------------------------------------

type classOpt func(*tenancyv1alpha1.NamespaceClass)

func newClass(t *testing.T, opts ...classOpt) *tenancyv1alpha1.NamespaceClass {
	t.Helper()
	// A class without a prefix must select its requesters; this selector selects every namespace, so
	// the tests that aim at existing names (foreign namespaces) can still use prefix-less classes.
	every := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpExists}}}
	c := &tenancyv1alpha1.NamespaceClass{ObjectMeta: metav1.ObjectMeta{Name: uniq("class")}, Spec: tenancyv1alpha1.NamespaceClassSpec{
		ClusterRole: testRoleName, Access: tenancyv1alpha1.AccessSpec{RequesterNamespaceSelector: every}}}
	for _, o := range opts {
		o(c)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), c)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
	return c
}

func withPrefix(p string) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Naming.Prefix = p }
}
func asDefault() classOpt { return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Default = true } }
func withMaxTTL(d time.Duration) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Lifetime.MaxTTL = &metav1.Duration{Duration: d}
		c.Spec.Lifetime.DefaultTTL = &metav1.Duration{Duration: d}
	}
}
func withLimit(n int32) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.Access.MaxClaimsPerNamespace = n }
}
func withSelector(l map[string]string) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) {
		c.Spec.Access.RequesterNamespaceSelector = &metav1.LabelSelector{MatchLabels: l}
	}
}
func withAllowedLabels(keys ...string) classOpt {
	return func(c *tenancyv1alpha1.NamespaceClass) { c.Spec.AllowedClaimLabels = keys }
}

// newRequesterNamespace creates a namespace for claims (a pipeline's namespace).
func newRequesterNamespace(t *testing.T, l map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniq("req"), Labels: l}}
	NewWithT(t).Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

type claimOpt func(*tenancyv1alpha1.NamespaceClaim)

func withClass(name string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.ClassName = name }
}
func withNamespaceName(n string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.NamespaceName = n }
}
func withTTL(d time.Duration) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.TTL = &metav1.Duration{Duration: d} }
}
func withLabels(l map[string]string) claimOpt {
	return func(c *tenancyv1alpha1.NamespaceClaim) { c.Spec.Labels = l }
}

func newClaim(t *testing.T, ns string, opts ...claimOpt) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	c := &tenancyv1alpha1.NamespaceClaim{ObjectMeta: metav1.ObjectMeta{Name: uniq("claim"), Namespace: ns}}
	t.Cleanup(func() { checkInvariants(t) })
	for _, o := range opts {
		o(c)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), c)).To(Succeed())
	return c
}

// getClaim reads the claim from the API server.
func getClaim(g Gomega, c *tenancyv1alpha1.NamespaceClaim) *tenancyv1alpha1.NamespaceClaim {
	out := &tenancyv1alpha1.NamespaceClaim{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

// waitForReady waits until the claim's Ready condition has the given status and reason, and returns it.
func waitFor(t *testing.T, c *tenancyv1alpha1.NamespaceClaim, cond string, status metav1.ConditionStatus, reason string) *tenancyv1alpha1.NamespaceClaim {
	t.Helper()
	var got *tenancyv1alpha1.NamespaceClaim
	NewWithT(t).Eventually(func(g Gomega) {
		got = getClaim(g, c)
		rc := meta.FindStatusCondition(got.Status.Conditions, cond)
		g.Expect(rc).NotTo(BeNil(), "condition %s", cond)
		g.Expect(rc.Status).To(Equal(status), "condition %s: %s %s", cond, rc.Reason, rc.Message)
		g.Expect(rc.Reason).To(Equal(reason), rc.Message)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return got
}

// touch triggers a reconcile of the claim through an annotation change.
func touch(t *testing.T, c *tenancyv1alpha1.NamespaceClaim) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &tenancyv1alpha1.NamespaceClaim{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations["test/touch"] = fmt.Sprint(time.Now().UnixNano())
		return k8s.Patch(context.Background(), cur, patch)
	}).Should(Succeed())
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// expectNamespaceDeleting asserts that the namespace's deletion was requested: it is terminating, or
// kube-controller-manager's namespace controller already finished deleting it.
func expectNamespaceDeleting(g Gomega, name string) {
	ns := &corev1.Namespace{}
	err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, ns)
	if isNotFound(err) {
		return
	}
	g.Expect(err).To(Succeed())
	g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "namespace %s is not being deleted", name)
}
