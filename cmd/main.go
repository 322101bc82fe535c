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
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	tenancyv1alpha1 "github.com/nsclaim/nsclaim-operator/api/v1alpha1"
	"github.com/nsclaim/nsclaim-operator/internal/controller/configmaprequest"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespacebudget"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclaim"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceclass"
	"github.com/nsclaim/nsclaim-operator/internal/controller/namespaceorphan"
	"github.com/nsclaim/nsclaim-operator/internal/credentials"
	"github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/kubeconfigserver"
	"github.com/nsclaim/nsclaim-operator/internal/memlimit"
	"github.com/nsclaim/nsclaim-operator/internal/metricsauth"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
	"github.com/nsclaim/nsclaim-operator/internal/olmcondition"
	"github.com/nsclaim/nsclaim-operator/internal/ownership"
	seedpolicy "github.com/nsclaim/nsclaim-operator/internal/seeds"
	"github.com/nsclaim/nsclaim-operator/internal/watchcache"
	// +kubebuilder:scaffold:imports
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tenancyv1alpha1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

// options are the manager's settings; each flag can also be set through the environment variable
// named in its help, so a Deployment or an OLM Subscription's config can set it.
type options struct {
	metricsAddr              string
	probeAddr                string
	metricsPprof             bool
	secureMetrics            bool
	enableHTTP2              bool
	leaderElect              bool
	leaderElectionNamespace  string
	leaseDuration            time.Duration
	renewDeadline            time.Duration
	retryPeriod              time.Duration
	shutdownTimeout          time.Duration
	kubeconfigServer         string
	kubeconfigCAFile         string
	maxConcurrentReconciles  int
	selfTestConcurrency      int
	poolRefillRate           float64
	poolWithoutFence         bool
	qps                      float64
	burst                    int
	requestsNamespace        string
	seedNamespace            string
	seedResyncInterval       time.Duration
	requestPatterns          string
	requestsIgnored          string
	requestsClass            string
	tokenPolicyDefault       string
	fenceCheckInterval       time.Duration
	previousFenceGrace       time.Duration
	requireFence             bool
	startingClass            bool
	minimumPodSecurity       string
	credentialsCheckInterval time.Duration
	fleet                    fleetOptions
}

func main() {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", envOr("METRICS_BIND_ADDRESS", ":8443"),
		"The address the metrics endpoint binds to. Use :8443 for HTTPS or :8080 for HTTP, or 0 to disable it (METRICS_BIND_ADDRESS).")
	flag.BoolVar(&o.metricsPprof, "metrics-pprof", envBool("NSCLAIM_METRICS_PPROF", false),
		"Also serve Go's pprof endpoints (/debug/pprof/: heap and CPU profiles) on the metrics endpoint, behind its authentication (NSCLAIM_METRICS_PPROF: true or false).")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", envOr("HEALTH_PROBE_BIND_ADDRESS", ":8081"), "The address the probe endpoint binds to (HEALTH_PROBE_BIND_ADDRESS).")
	flag.BoolVar(&o.leaderElect, "leader-elect", envBool("LEADER_ELECT", true), "Enable leader election, so that only one replica reconciles at a time (LEADER_ELECT).")
	flag.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the leader election Lease; defaults to the Pod's namespace (POD_NAMESPACE).")
	flag.DurationVar(&o.leaseDuration, "leader-election-lease-duration", envDuration("LEADER_ELECTION_LEASE_DURATION", 15*time.Second),
		"How long a non-leader waits after the last renewal before it takes over a Lease the leader did not release (LEADER_ELECTION_LEASE_DURATION).")
	flag.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", envDuration("LEADER_ELECTION_RENEW_DEADLINE", 10*time.Second),
		"How long the leader keeps retrying to renew before it gives up leadership and exits (LEADER_ELECTION_RENEW_DEADLINE).")
	flag.DurationVar(&o.retryPeriod, "leader-election-retry-period", envDuration("LEADER_ELECTION_RETRY_PERIOD", 2*time.Second),
		"Interval between attempts to acquire or renew the Lease (LEADER_ELECTION_RETRY_PERIOD).")
	flag.DurationVar(&o.shutdownTimeout, "graceful-shutdown-timeout", envDuration("GRACEFUL_SHUTDOWN_TIMEOUT", 30*time.Second),
		"How long in-flight reconciles may run after SIGTERM before the manager exits; keep it below the Pod's terminationGracePeriodSeconds (GRACEFUL_SHUTDOWN_TIMEOUT).")
	flag.BoolVar(&o.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false, "Enable HTTP/2 for the metrics server.")
	flag.StringVar(&o.kubeconfigServer, "kubeconfig-server", os.Getenv("NSCLAIM_KUBECONFIG_SERVER"),
		"API server URL written into issued kubeconfigs; defaults to the one the operator uses (NSCLAIM_KUBECONFIG_SERVER).")
	flag.StringVar(&o.kubeconfigCAFile, "kubeconfig-ca-file", os.Getenv("NSCLAIM_KUBECONFIG_CA_FILE"),
		"CA bundle written into issued kubeconfigs; defaults to the one the operator uses (NSCLAIM_KUBECONFIG_CA_FILE).")
	flag.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", envInt("NSCLAIM_WORKERS", 32), "Claims reconciled in parallel (NSCLAIM_WORKERS).")
	flag.Float64Var(&o.poolRefillRate, "pool-refill-rate", envFloat("NSCLAIM_POOL_REFILL_RATE", defaultPoolRefillRate),
		"Namespaces per second one class's warm pool creates at most; the refill also waits while claims are being reconciled (NSCLAIM_POOL_REFILL_RATE).")
	flag.BoolVar(&o.poolWithoutFence, "pool-without-fence", envBool("NSCLAIM_POOL_WITHOUT_FENCE", false),
		"With --require-fence=false, run the classes' warm pools anyway (not recommended: without the fence's label guard "+
			"anyone who may create a namespace can make one look pooled and have it handed to a claim) (NSCLAIM_POOL_WITHOUT_FENCE).")
	flag.IntVar(&o.selfTestConcurrency, "self-test-concurrency", 8, "SubjectAccessReviews in flight per claim (the self-test's sample behind a webhook authorizer or for a keyless creator).")
	flag.Float64Var(&o.qps, "kube-api-qps", envFloat("NSCLAIM_KUBE_API_QPS", 500),
		"Client-side QPS limit towards the API server; the API server's priority and fairness protects it beyond that (NSCLAIM_KUBE_API_QPS). See docs/benchmarks.md.")
	flag.IntVar(&o.burst, "kube-api-burst", envInt("NSCLAIM_KUBE_API_BURST", 1000), "Client-side burst limit towards the API server (NSCLAIM_KUBE_API_BURST).")
	flag.DurationVar(&o.credentialsCheckInterval, "credentials-check-interval", envDuration("NSCLAIM_CREDENTIALS_CHECK_INTERVAL", 10*time.Minute),
		"How often a Ready claim's credentials Secret is checked (a probe that reads nothing) and re-created if it was deleted;"+
			" 0 checks only on changes and at renewal (NSCLAIM_CREDENTIALS_CHECK_INTERVAL).")
	flag.StringVar(&o.requestsNamespace, "requests-namespace", os.Getenv("NSCLAIM_REQUESTS_NAMESPACE"),
		"Turns the ConfigMap protocol on: the namespace where pipelines create request ConfigMaps and read the Secrets of the same name (the shell operator's default is "+
			configmaprequest.DefaultNamespace+"); empty turns it off (NSCLAIM_REQUESTS_NAMESPACE).")
	flag.StringVar(&o.requestPatterns, "request-name-patterns", envOr("NSCLAIM_REQUEST_NAME_PATTERNS", configmaprequest.DefaultPatterns),
		"Space- or comma-separated regular expressions; a request ConfigMap's name must match one (NSCLAIM_REQUEST_NAME_PATTERNS).")
	flag.StringVar(&o.requestsIgnored, "requests-ignored-names", envOr("NSCLAIM_REQUESTS_IGNORED_NAMES", configmaprequest.DefaultIgnored),
		"ConfigMap names in the requests namespace skipped without a warning (NSCLAIM_REQUESTS_IGNORED_NAMES).")
	flag.StringVar(&o.seedNamespace, "seed-namespace", os.Getenv(tenancyv1alpha1.SeedNamespaceEnv),
		"The one namespace classes' seeds are copied from (docs/seeds.md); empty (the default) turns seeds off (NSCLAIM_SEED_NAMESPACE).")
	flag.DurationVar(&o.seedResyncInterval, "seed-resync-interval", envDuration("NSCLAIM_SEED_RESYNC_INTERVAL", seedpolicy.DefaultResync),
		"How often a claim's Secret copies of seeds are applied again, which puts back one a tenant deleted or changed"+
			" (docs/seeds.md: Secrets outside the seed namespace are never watched); 0 turns it off (NSCLAIM_SEED_RESYNC_INTERVAL).")
	flag.StringVar(&o.requestsClass, "requests-class", os.Getenv("NSCLAIM_REQUESTS_CLASS"), "NamespaceClass for ConfigMap requests; empty means the default class (NSCLAIM_REQUESTS_CLASS).")
	flag.StringVar(&o.tokenPolicyDefault, "token-policy-default", envOr("NSCLAIM_TOKEN_POLICY_DEFAULT", "multiple-times"),
		"Token policy of ConfigMap requests without the nsplease.container.training/issue-token annotation: multiple-times or only-once (NSCLAIM_TOKEN_POLICY_DEFAULT).")
	flag.DurationVar(&o.fenceCheckInterval, "fence-check-interval", envDuration("NSCLAIM_FENCE_CHECK_INTERVAL", 5*time.Minute),
		"How often to check that the admission fence (config/fence) is installed as shipped, as a backstop: the first check runs at start,"+
			" and a watch on the fence's objects checks again within a second of any change."+
			" 0 turns the check off, which --require-fence does not allow (NSCLAIM_FENCE_CHECK_INTERVAL).")
	flag.BoolVar(&o.startingClass, "starting-class", envBool("NSCLAIM_STARTING_CLASS", false),
		"At start, create the NamespaceClass `ci` (marked default) when the cluster has no NamespaceClass at all, so that a claim works right after install;"+
			" the shipped Deployment sets it (NSCLAIM_STARTING_CLASS: true or false).")
	flag.DurationVar(&o.previousFenceGrace, "previous-fence-grace", envDuration("NSCLAIM_PREVIOUS_FENCE_GRACE", fence.DefaultPreviousGrace),
		"How long the previous release's admission fence is accepted, after the operator first saw it, while this release's is not applied"+
			" (an upgrade in progress): claims are provisioned, the pools and sleep are not, and the fence is reported as not intact (gauge,"+
			" alert, OperatorCondition). After it nothing is provisioned, as without a fence. 0 never accepts it (NSCLAIM_PREVIOUS_FENCE_GRACE).")
	flag.BoolVar(&o.requireFence, "require-fence", envBool("NSCLAIM_REQUIRE_FENCE", true),
		"Provision nothing while the admission fence (config/fence) is missing or altered; claims wait with Ready=False, reason "+
			tenancyv1alpha1.FenceNotIntactReason+". false lets the operator work with RBAC as the only limit (NSCLAIM_REQUIRE_FENCE: true or false).")
	flag.StringVar(&o.minimumPodSecurity, "minimum-pod-security", envOr("NSCLAIM_MINIMUM_POD_SECURITY", string(tenancyv1alpha1.PodSecurityBaseline)),
		"The weakest Pod Security level the operator creates namespaces with: baseline, restricted or privileged; classes asking for less are refused"+
			" (NSCLAIM_MINIMUM_POD_SECURITY). The shipped fence admits only baseline and restricted namespaces.")
	zapOpts := zap.Options{Development: false}
	bindFleetFlags(&o.fleet)
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	setMemoryLimit()

	if err := validate(&o); err != nil {
		setupLog.Error(err, "Invalid settings; not starting")
		os.Exit(1)
	}
	if err := run(o); err != nil {
		setupLog.Error(err, "Manager stopped")
		os.Exit(1)
	}
}

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the container's memory limit
// (NSCLAIM_MEMORY_LIMIT) unless GOMEMLIMIT is set, and logs the limit in effect.
func setMemoryLimit() {
	d, limit := memlimit.Apply(os.Getenv, memlimit.Image())
	if d.Ignored != "" {
		setupLog.Info("Ignoring the container memory limit", "reason", d.Ignored)
	}
	if limit == memlimit.NoLimit {
		setupLog.Info("Go soft memory limit", "limit", "none", "source", d.Source)
		return
	}
	setupLog.Info("Go soft memory limit", "bytes", limit, "source", d.Source)
}

// validate refuses settings the manager must not start with: a malformed environment variable (the
// helpers below record those rather than fall back to a default), an unknown Pod Security level, and a
// required fence that is never checked.
func validate(o *options) error {
	if len(envErrors) > 0 {
		return errors.Join(envErrors...)
	}
	switch tenancyv1alpha1.PodSecurityLevel(o.minimumPodSecurity) {
	case tenancyv1alpha1.PodSecurityBaseline, tenancyv1alpha1.PodSecurityRestricted, tenancyv1alpha1.PodSecurityPrivileged:
	default:
		return fmt.Errorf("--minimum-pod-security (NSCLAIM_MINIMUM_POD_SECURITY) must be baseline, restricted or privileged, got %q", o.minimumPodSecurity)
	}
	if o.requireFence && o.fenceCheckInterval <= 0 {
		return fmt.Errorf("--require-fence (NSCLAIM_REQUIRE_FENCE, default true) needs a positive --fence-check-interval (NSCLAIM_FENCE_CHECK_INTERVAL), got %s:"+
			" without checks the fence is never known to be intact and nothing would be provisioned; set an interval, or NSCLAIM_REQUIRE_FENCE=false", o.fenceCheckInterval)
	}
	if o.fenceCheckInterval < 0 || o.credentialsCheckInterval < 0 || o.previousFenceGrace < 0 || o.seedResyncInterval < 0 {
		return errors.New("--fence-check-interval, --credentials-check-interval, --previous-fence-grace and --seed-resync-interval must not be negative")
	}
	return nil
}

func run(o options) error {
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	if o.fleet.hub {
		return runHub(o, cfg)
	}
	endpoint, err := kubeconfigserver.Discover(context.Background(), cfg, o.kubeconfigServer, o.kubeconfigCAFile, setupLog)
	if err != nil {
		return err
	}
	protocol, err := configmaprequest.New(o.requestsNamespace, o.requestPatterns, o.requestsIgnored, o.requestsClass, o.tokenPolicyDefault)
	if err != nil {
		return err
	}

	// The ownership key (internal/ownership): read, or made by the first replica, before anything runs,
	// so every replica proves and records ownership with the same key.
	ownershipKey, keyCreated, err := loadOwnershipKey(cfg, o.leaderElectionNamespace)
	if err != nil {
		return err
	}

	// Made before the caches start: its Namespace transform must see every deletion from the start.
	nameReuse := watchcache.NewNamespaceReuse(clock.RealClock{}, time.Now())
	mgr, err := newManager(o, cfg, watchcache.CacheOptions(protocol.Namespace, nameReuse))
	if err != nil {
		return err
	}
	// The tracker's Namespace informer runs on every replica from its start, not only once it leads:
	// a standby promoted hours later has seen the deletions that feed the reuse window (see Feed for
	// why this rather than a leader waiting the window out after a takeover).
	if err := nameReuse.Feed(mgr); err != nil {
		return err
	}

	// The admission fence's observer, and with --require-fence the claim reconciler's gate.
	fenceObs, fenceGate := newFenceObserver(mgr, o)
	bindings, defaultSAs, err := watchcache.AddSideCaches(mgr, cfg, scheme)
	if err != nil {
		return err
	}
	activePods, err := watchcache.AddActivePods(mgr, cfg, scheme)
	if err != nil {
		return err
	}
	// The seed namespace's caches (docs/seeds.md): its labelled Secrets and ConfigMaps only, through a
	// Role there, and the ConfigMap copies; none when seeds are off.
	seedCaches, err := watchcache.AddSeeds(mgr, cfg, scheme, o.seedNamespace)
	if err != nil {
		return err
	}
	owns := &ownership.Verifier{Key: ownershipKey, KeyCreated: keyCreated, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("nsclaim")}
	claims := &namespaceclaim.NamespaceClaimReconciler{
		Ownership:                owns,
		Bindings:                 bindings,
		DefaultServiceAccounts:   defaultSAs,
		ActivePods:               activePods,
		Client:                   mgr.GetClient(),
		APIReader:                mgr.GetAPIReader(),
		Recorder:                 mgr.GetEventRecorder("nsclaim"),
		Clock:                    clock.RealClock{},
		Endpoint:                 endpoint,
		SelfTestConcurrency:      o.selfTestConcurrency,
		MaxConcurrentReconciles:  o.maxConcurrentReconciles,
		Requests:                 protocol,
		CredentialsCheckInterval: o.credentialsCheckInterval,
		Fence:                    fenceGate,
		PoolWithoutFence:         o.poolWithoutFence,
		MinimumPodSecurity:       tenancyv1alpha1.PodSecurityLevel(o.minimumPodSecurity),
		NameReuse:                nameReuse,
		Seeds:                    seedCaches,
		SeedNamespace:            o.seedNamespace,
		SeedResync:               o.seedResyncInterval,
	}
	// The pool reconciler reports its counts through the class reconciler, the one writer of a class's status.
	pools := namespaceclass.NewPoolReports()
	if err := setupClaimsAndPool(mgr, claims, pools, o.poolRefillRate); err != nil {
		return err
	}
	if err := setupSideReconcilers(mgr, owns, protocol, pools, tenancyv1alpha1.PodSecurityLevel(o.minimumPodSecurity)); err != nil {
		return err
	}
	// +kubebuilder:scaffold:builder

	if err := addRunnables(mgr, o, cfg, endpoint, fenceObs); err != nil {
		return err
	}
	setupLog.Info("Starting manager", "kubeconfigServer", endpoint.Server, "kubeconfigServerSource", endpoint.Source, "workers", o.maxConcurrentReconciles,
		"requireFence", o.requireFence, "startingClass", o.startingClass, "minimumPodSecurity", o.minimumPodSecurity)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// newManager creates the manager: metrics (secure and authorized by metricsauth unless turned off, pprof
// on request), health probes, leader election and the caches of cacheOpts.
func newManager(o options, cfg *rest.Config, cacheOpts cache.Options) (ctrl.Manager, error) {
	// If HTTP/2 is enabled the server is exposed to the HTTP/2 Stream Cancellation and Rapid Reset
	// CVEs; disable it by default.
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.secureMetrics, TLSOpts: tlsOpts}
	if o.metricsPprof {
		metricsOpts.ExtraHandlers = pprofHandlers()
	}
	if o.secureMetrics {
		metricsOpts.FilterProvider = metricsauth.Filter
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		WebhookServer:                 webhook.NewServer(webhook.Options{TLSOpts: tlsOpts}),
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "nsclaim.tenancy.nsclaim.dev",
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		GracefulShutdownTimeout:       &o.shutdownTimeout,
		Cache:                         cacheOpts,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// newFenceObserver returns the admission fence's observer (nil with --fence-check-interval 0) and, with
// --require-fence, the same observer as the claim reconciler's gate. The admission fence (config/fence)
// is checked at start and periodically; see docs/security.md. With the gate nothing is provisioned until
// the first check found the fence intact.
func newFenceObserver(mgr ctrl.Manager, o options) (*fence.Observer, namespaceclaim.FenceGate) {
	var obs *fence.Observer
	if o.fenceCheckInterval > 0 {
		obs = fence.NewObserver(mgr.GetEventRecorder("nsclaim"), o.leaderElectionNamespace, o.requireFence, o.previousFenceGrace, setupLog)
	}
	var gate namespaceclaim.FenceGate
	if o.requireFence {
		gate = obs
	}
	return obs, gate
}

// addRunnables registers the metrics collector and adds what runs beside the reconcilers: OLM's startup
// gate, the kubeconfig server's report, the fence check, the starting class and the health checks.
func addRunnables(mgr ctrl.Manager, o options, cfg *rest.Config, endpoint credentials.Endpoint, fenceObs *fence.Observer) error {
	monitoring.Register()
	if err := ctrlmetrics.Registry.Register(monitoring.NewClaimCollector(mgr.GetCache())); err != nil {
		return fmt.Errorf("registering claim metrics: %w", err)
	}
	// Installed by OLM, the operator reports Upgradeable=False while its leader runs the startup pass.
	olmReporter, err := olmcondition.NewReporter(cfg, o.leaderElectionNamespace)
	if err != nil {
		return err
	}
	if err := mgr.Add(&olmcondition.StartupGate{Reporter: olmReporter, Cache: mgr.GetCache()}); err != nil {
		return fmt.Errorf("adding startup gate: %w", err)
	}

	// The OperatorCondition says where handed kubeconfigs point, so that an admin sees an in-cluster
	// address there (OLM's console lists the conditions).
	kubeconfigserver.Report(context.Background(), olmReporter, endpoint, setupLog)

	// The fence check runs on the leader: once right at start, within a second of any change of the
	// fence's objects (watched by name), and every --fence-check-interval as a backstop.
	if err := addFenceCheck(mgr, fenceObs, olmReporter, o.fenceCheckInterval); err != nil {
		return err
	}
	if o.startingClass {
		if err := addStartingClass(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	if err := mgr.AddReadyzCheck("cache-sync", monitoring.CacheSyncedCheck(mgr.GetCache())); err != nil {
		return fmt.Errorf("adding cache sync check: %w", err)
	}
	return nil
}

// addFenceCheck adds the leader's check of the admission fence (when obs is not nil; fence.Observer's
// Runnable).
func addFenceCheck(mgr ctrl.Manager, obs *fence.Observer, reporter *olmcondition.Reporter, interval time.Duration) error {
	if obs == nil {
		setupLog.Info("The admission fence is not checked (--fence-check-interval 0) and not required; RBAC is the only limit")
		return nil
	}
	check, err := obs.Runnable(mgr.GetAPIReader(), mgr.GetConfig(), reporter, interval)
	if err != nil {
		return err
	}
	if err := mgr.Add(check); err != nil {
		return fmt.Errorf("adding fence check: %w", err)
	}
	return nil
}

// The fence observer is the claim reconciler's fence gate.
var (
	_ namespaceclaim.FenceGate         = &fence.Observer{}
	_ namespaceclaim.FenceIntactEvents = &fence.Observer{}
	_ namespaceclaim.FenceCurrent      = &fence.Observer{}
)

// addStartingClass adds the leader's one-time creation of the starting class (--starting-class).
func addStartingClass(mgr ctrl.Manager) error {
	class, err := namespaceclass.StartingClass()
	if err != nil {
		return err
	}
	if err := mgr.Add(&namespaceclass.StartingClassCreator{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Class: class, Log: setupLog}); err != nil {
		return fmt.Errorf("adding the starting class: %w", err)
	}
	return nil
}

// envErrors collects malformed environment settings while the flags' defaults are read; validate
// refuses to start when there are any, naming each setting.
var envErrors []error

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// envBool reads true or false, and nothing else (not True, 1 or yes).
func envBool(key string, def bool) bool {
	v := envOr(key, "")
	switch v {
	case "":
		return def
	case "true":
		return true
	case "false":
		return false
	}
	envErrors = append(envErrors, fmt.Errorf("%s must be true or false, got %q", key, v))
	return def
}

// envInt reads a positive integer.
func envInt(key string, def int) int {
	v := envOr(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		envErrors = append(envErrors, fmt.Errorf("%s must be a positive integer, got %q", key, v))
		return def
	}
	return n
}

// envDuration reads a Go duration (such as 30s or 5m) that is not negative.
func envDuration(key string, def time.Duration) time.Duration {
	v := envOr(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		envErrors = append(envErrors, fmt.Errorf("%s must be a duration such as 30s or 5m, not negative, got %q", key, v))
		return def
	}
	return d
}

// envFloat reads a positive number.
func envFloat(key string, def float64) float64 {
	v := envOr(key, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		envErrors = append(envErrors, fmt.Errorf("%s must be a positive number, got %q", key, v))
		return def
	}
	return f
}

// pprofHandlers are Go's pprof endpoints, for the metrics server (--metrics-pprof).
func pprofHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// loadOwnershipKey reads the ownership key from the API server, or makes it, with a client of its own
// (the manager's does not run yet).
func loadOwnershipKey(cfg *rest.Config, namespace string) (*ownership.Key, time.Time, error) {
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("creating a client: %w", err)
	}
	return ownership.LoadOrCreateKey(context.Background(), direct, namespace)
}

// setupSideReconcilers sets up the reconcilers beside the claim's and the pool's: the orphan sweep, the
// class reconciler, the budget reconciler (with its metrics) and, when the ConfigMap protocol is on, its request reconciler.
func setupSideReconcilers(mgr ctrl.Manager, owns *ownership.Verifier, protocol configmaprequest.Protocol, pools *namespaceclass.PoolReports,
	minimumPodSecurity tenancyv1alpha1.PodSecurityLevel) error {
	if err := (&namespaceorphan.OrphanReconciler{
		Ownership: owns,
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("nsclaim"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up orphaned namespace controller: %w", err)
	}
	if err := (&namespaceclass.NamespaceClassReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		MinimumPodSecurity: minimumPodSecurity,
		Pools:              pools,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up NamespaceClass controller: %w", err)
	}
	if err := (&namespacebudget.BudgetReconciler{Client: mgr.GetClient(), Ownership: owns}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up NamespaceBudget controller: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(monitoring.NewBudgetCollector(mgr.GetCache())); err != nil {
		return fmt.Errorf("registering budget metrics: %w", err)
	}
	if protocol.Namespace != "" {
		if err := (&configmaprequest.ConfigMapRequestReconciler{
			Client:   mgr.GetClient(),
			Recorder: mgr.GetEventRecorder("nsclaim"),
			Protocol: protocol,
		}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up ConfigMap request controller: %w", err)
		}
		setupLog.Info("ConfigMap protocol on", "namespace", protocol.Namespace, "patterns", protocol.PatternList(), "class", protocol.ClassName)
	}
	return nil
}
