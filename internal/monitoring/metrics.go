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

// Package monitoring defines nsclaim's Prometheus metrics. One table, Definitions, describes every
// metric; the collectors registered on controller-runtime's registry and docs/metrics.md are both
// produced from it. controller-runtime's own metrics (reconciles, work queues, leader election) are
// not re-created here.
package monitoring

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Kind is the Prometheus type of a metric.
type Kind string

// Kinds of metrics in Definitions.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Definition describes one metric: its full name, type, help text, label names and, for
// histograms, bucket upper bounds in seconds. Collected is true for metrics computed at scrape
// time by a collector (NewClaimCollector) rather than updated by the operator's code.
type Definition struct {
	Name      string
	Kind      Kind
	Help      string
	Labels    []string
	Buckets   []float64
	Collected bool
}

// Metric names.
const (
	ClaimsName               = "nsclaim_claims"
	ClaimsByPhaseName        = "nsclaim_claims_by_phase"
	ProvisioningDurationName = "nsclaim_provisioning_duration_seconds"
	CredentialsIssuedName    = "nsclaim_credentials_issued_total"
	CredentialFailuresName   = "nsclaim_credential_failures_total"
	RefusalsName             = "nsclaim_refusals_total"
	ExpiriesName             = "nsclaim_expiries_total"
	IdleExpiriesName         = "nsclaim_idle_expiries_total"
	SleepsName               = "nsclaim_sleeps_total"
	WakesName                = "nsclaim_wakes_total"
	SleepReappliedName       = "nsclaim_sleep_reapplied_total"
	SleepReplicaSecondsName  = "nsclaim_sleep_replica_seconds_total"
	DeletionDurationName     = "nsclaim_deletion_duration_seconds"
	SelfTestFailuresName     = "nsclaim_self_test_failures_total"
	FenceIntactName          = "nsclaim_admission_fence_intact"
	FencePreviousName        = "nsclaim_admission_fence_previous_accepted"
	OrphansDeletedName       = "nsclaim_orphaned_namespaces_deleted_total"
	OwnershipUnverifiedName  = "nsclaim_ownership_unverified_total"
	SelfTestRequestsName     = "nsclaim_self_test_requests_total"
	ClusterWideGrantsName    = "nsclaim_cluster_wide_grants"
	KubeconfigServerName     = "nsclaim_kubeconfig_server_in_cluster_only"
	OldestWaitName           = "nsclaim_oldest_claim_wait_seconds"
	PoolHitsName             = "nsclaim_pool_hits_total"
	PoolMissesName           = "nsclaim_pool_misses_total"
	PoolNamespacesName       = "nsclaim_pool_namespaces"
	PoolCreatedName          = "nsclaim_pool_namespaces_created_total"
	BudgetQueuedName         = "nsclaim_budget_queued_claims"
	BudgetOldestWaitName     = "nsclaim_budget_oldest_wait_seconds"
	BudgetAdmissionsName     = "nsclaim_budget_admissions_total"
	BudgetEvictionsName      = "nsclaim_budget_evictions_total"
	BudgetExhaustionsName    = "nsclaim_budget_exhaustions_total"
	FleetClaimsName          = "nsclaim_fleet_claims"
)

// Label names.
const (
	ClassLabel  = "class"
	StateLabel  = "state"
	PhaseLabel  = "phase"
	KindLabel   = "kind"
	ReasonLabel = "reason"
	// ClusterLabel is a fleet hub's member cluster (its kubeconfig Secret's name; docs/fleet.md).
	ClusterLabel = "cluster"
)

// Values of the kind label of CredentialsIssuedName.
const (
	KindIssue   = "issue"
	KindRenewal = "renewal"
)

// Label names and values of OwnershipUnverifiedName.
const (
	ActionLabel   = "action"
	ActionBind    = "bind"
	ActionHandout = "handout"
	ActionDelete  = "delete"
	ActionCount   = "count"
)

// Label names and values of SelfTestRequestsName.
const (
	ReviewLabel  = "review"
	ReviewRules  = "SelfSubjectRulesReview"
	ReviewAccess = "SubjectAccessReview"
	ReviewToken  = "TokenRequest"
)

// durationBuckets spans a fast provisioning or deletion (under a second) up to one stuck behind a
// slow namespace finalizer (ten minutes).
var durationBuckets = []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

// Definitions is the single table of nsclaim's metrics.
var Definitions = []Definition{
	{Name: ClaimsName, Kind: Gauge, Labels: []string{ClassLabel, StateLabel}, Collected: true,
		Help: "NamespaceClaims by class and state (Ready, Pending, Refused, Expired, Released, Terminating), read from the informer cache at scrape time. The class is the resolved class in status; empty until the class is resolved."},
	{Name: OldestWaitName, Kind: Gauge, Labels: []string{ClassLabel, StateLabel}, Collected: true,
		Help: "Seconds the oldest claim of the class has waited in the state: Pending (to become Ready: since its Ready condition last turned False or Unknown, or since its creation when it has none) or Terminating (for its namespace to go: since its deletion was requested); read from the informer cache at scrape time. Only (class, state) pairs with such a claim have a series, so a steady churn of claims that each move on soon keeps it low."},
	{Name: ClaimsByPhaseName, Kind: Gauge, Labels: []string{ClassLabel, PhaseLabel}, Collected: true,
		Help: "NamespaceClaims by class and lifecycle phase (status.phase: Pending, Active, Idle, Sleeping, Refused, Expired, Terminating; docs/lifecycle.md), read from the informer cache at scrape time. Idle claims are those whose idle clock runs; Sleeping ones those whose workloads the operator scaled down; claims not yet given a phase are not counted."},
	{Name: ProvisioningDurationName, Kind: Histogram, Labels: []string{ClassLabel}, Buckets: durationBuckets,
		Help: "Seconds from a claim's creation to its first Ready=True."},
	{Name: CredentialsIssuedName, Kind: Counter, Labels: []string{ClassLabel, KindLabel},
		Help: "Tokens written to credentials Secrets; kind is issue for a claim's first token, renewal for a replacement."},
	{Name: CredentialFailuresName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Failed attempts to mint a token or write the credentials Secret."},
	{Name: RefusalsName, Kind: Counter, Labels: []string{ReasonLabel},
		Help: "Claims refused, by the condition reason that explains why (ClassNotFound, ClaimLimitExceeded, ...); counted on the transition to the refusal."},
	{Name: ExpiriesName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Claims whose TTL passed and whose namespace was deleted."},
	{Name: IdleExpiriesName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Claims whose namespace stayed idle (no Pod Pending or Running, no heartbeat) for its idle TTL and was deleted; they are counted in " + ExpiriesName + " too."},
	{Name: SleepsName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Namespaces put to sleep (the class's lifetime.sleepAfter): their Deployments and StatefulSets scaled to 0, their CronJobs suspended."},
	{Name: WakesName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Sleeping namespaces woken by a heartbeat (kubectl nsclaim heartbeat, extend or wake) or by their class dropping lifetime.sleepAfter."},
	{Name: SleepReappliedName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Objects of a sleeping namespace that ran again (a GitOps controller or the tenant restored their replicas or resumed them) and that the operator scaled down or suspended again at its resync."},
	{Name: SleepReplicaSecondsName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Replica-seconds a sleep avoided: the replicas the operator recorded and scaled to 0, times the seconds the namespace slept; added when it wakes or expires (a namespace deleted while asleep adds nothing). An upper bound of the Pod-seconds saved: it assumes every recorded replica would have run the whole time, and does not subtract replicas a GitOps controller restored until the operator's resync."},
	{Name: DeletionDurationName, Kind: Histogram, Labels: []string{ClassLabel}, Buckets: durationBuckets,
		Help: "Seconds from a claim's deletion request to the removal of its finalizer (namespace gone)."},
	{Name: SelfTestFailuresName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Permission self-tests (rules reviews made with the tenant's token, or SubjectAccessReviews for a keyless creator or behind a webhook authorizer) that found missing or excess permissions."},
	{Name: FenceIntactName, Kind: Gauge,
		Help: "1 if this release's admission fence that protects managed namespaces is in place, 0 if it is missing or altered, or if only the previous release's fence is (which does not cover this release's rights); absent until the leader first checks it."},
	{Name: FencePreviousName, Kind: Gauge,
		Help: "1 while only the previous release's admission fence is in place and the operator still accepts it (NSCLAIM_PREVIOUS_FENCE_GRACE after it first saw it: it provisions claims, but runs no pool and no sleep), 0 otherwise; absent until the leader first checks the fence."},
	{Name: OrphansDeletedName, Kind: Counter,
		Help: "Namespaces nsclaim made whose claim no longer existed at the API server (its finalizer was removed, or it was deleted while the operator was down), deleted by the operator."},
	{Name: OwnershipUnverifiedName, Kind: Counter, Labels: []string{ActionLabel},
		Help: "Namespaces that carried nsclaim's marks (a claim's or a pool's labels) without nsclaim's ownership record for them, so someone else marked them, by what the operator refused to do with them: bind (a claim's namespace), handout (a pooled one), delete, count (the claim limit). Each is also reported with a Warning Event OwnershipUnverified."},
	{Name: SelfTestRequestsName, Kind: Counter, Labels: []string{ReviewLabel},
		Help: "Requests the permission self-test made, by review: SelfSubjectRulesReview (two per self-test), SubjectAccessReview (only when a rules review answered incomplete, for example behind a webhook authorizer), TokenRequest (a short-lived token minted for a self-test when no credentials were due; never written anywhere)."},
	{Name: ClusterWideGrantsName, Kind: Gauge,
		Help: "Bindings, other than the API server's defaults, that grant something to every ServiceAccount (system:serviceaccounts) or every user (system:authenticated), as of the last self-test; each is reported once with a Warning Event on the binding. Absent until the first self-test."},
	{Name: KubeconfigServerName, Kind: Gauge,
		Help: "1 if handed kubeconfigs name an API server address only clients inside the cluster reach (the operator runs in a Pod, NSCLAIM_KUBECONFIG_SERVER is not set and kube-public/cluster-info publishes no other address), 0 otherwise; set at start."},
	{Name: PoolHitsName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Claims handed a namespace from their class's warm pool (spec.pool; docs/pool.md)."},
	{Name: PoolMissesName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Claims of a class with a warm pool that found no ready pooled namespace and got a new one (condition Pooled, reason PoolEmpty)."},
	{Name: PoolNamespacesName, Kind: Gauge, Labels: []string{ClassLabel, StateLabel}, Collected: true,
		Help: "Pooled namespaces of each class with a pool, by state: ready (a claim may be handed one now) or creating (kube-controller-manager has not made it usable yet); read from the classes' status.pool in the informer cache at scrape time."},
	{Name: PoolCreatedName, Kind: Counter, Labels: []string{ClassLabel},
		Help: "Namespaces created to fill a class's warm pool."},
	{Name: BudgetQueuedName, Kind: Gauge, Labels: []string{BudgetLabel}, Collected: true,
		Help: "Claims waiting for each NamespaceBudget (status.queued; docs/budgets.md), read from the informer cache at scrape time."},
	{Name: BudgetOldestWaitName, Kind: Gauge, Labels: []string{BudgetLabel}, Collected: true,
		Help: "Seconds the oldest claim waiting for each NamespaceBudget has waited (since its creation, status.oldestQueuedSince); only budgets with a waiting claim have a series."},
	{Name: BudgetAdmissionsName, Kind: Counter, Labels: []string{BudgetLabel},
		Help: "Claims a NamespaceBudget admitted (charged before their namespace was made or handed out)."},
	{Name: BudgetEvictionsName, Kind: Counter, Labels: []string{BudgetLabel},
		Help: "Idle claims a NamespaceBudget of onExhausted EvictIdle deleted to make room for a newer claim of the same requester."},
	{Name: BudgetExhaustionsName, Kind: Counter, Labels: []string{BudgetLabel, OutcomeLabel},
		Help: "Claims that did not fit a NamespaceBudget, by outcome: queued (counted when the claim enters the queue), rejected (onExhausted Reject, or maxQueueWait passed) or evicting (EvictIdle)."},
	{Name: FleetClaimsName, Kind: Gauge, Labels: []string{ClusterLabel, ClassLabel}, Collected: true,
		Help: "On a fleet hub (--fleet-hub; docs/fleet.md), claims placed on each member cluster (status.cluster), by class, read from the informer cache at scrape time; the placer's counts. Absent outside hub mode."},
}

// lookup returns the entry of Definitions with the given name; it panics if there is none, which
// is a programming error caught by the package's tests.
func lookup(name string) Definition {
	for _, d := range Definitions {
		if d.Name == name {
			return d
		}
	}
	panic(fmt.Sprintf("monitoring: no metric %q in Definitions", name))
}

func counterVec(name string) *prometheus.CounterVec {
	d := lookup(name)
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
}

func histogramVec(name string) *prometheus.HistogramVec {
	d := lookup(name)
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: d.Buckets}, d.Labels)
}

// gaugeVec returns a gauge vector; with no labels it reports nothing until its first Set, so a
// gauge that was never set is absent rather than a misleading 0.
func gaugeVec(name string) *prometheus.GaugeVec {
	d := lookup(name)
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
}

var (
	provisioningDuration = histogramVec(ProvisioningDurationName)
	credentialsIssued    = counterVec(CredentialsIssuedName)
	credentialFailures   = counterVec(CredentialFailuresName)
	refusals             = counterVec(RefusalsName)
	expiries             = counterVec(ExpiriesName)
	idleExpiries         = counterVec(IdleExpiriesName)
	sleeps               = counterVec(SleepsName)
	wakes                = counterVec(WakesName)
	sleepReapplied       = counterVec(SleepReappliedName)
	sleepReplicaSeconds  = counterVec(SleepReplicaSecondsName)
	deletionDuration     = histogramVec(DeletionDurationName)
	selfTestFailures     = counterVec(SelfTestFailuresName)
	fenceIntact          = gaugeVec(FenceIntactName)
	fencePrevious        = gaugeVec(FencePreviousName)
	orphansDeleted       = counterVec(OrphansDeletedName)
	ownershipUnverified  = counterVec(OwnershipUnverifiedName)
	selfTestRequests     = counterVec(SelfTestRequestsName)
	clusterWideGrants    = gaugeVec(ClusterWideGrantsName)
	kubeconfigServer     = gaugeVec(KubeconfigServerName)
	poolHits             = counterVec(PoolHitsName)
	poolMisses           = counterVec(PoolMissesName)
	poolCreated          = counterVec(PoolCreatedName)
	budgetAdmissions     = counterVec(BudgetAdmissionsName)
	budgetEvictions      = counterVec(BudgetEvictionsName)
	budgetExhaustions    = counterVec(BudgetExhaustionsName)

	// instrumented lists the collectors above, in the order of Definitions, for Register.
	instrumented = []prometheus.Collector{
		provisioningDuration, credentialsIssued, credentialFailures, refusals,
		expiries, idleExpiries, sleeps, wakes, sleepReapplied, sleepReplicaSeconds, deletionDuration, selfTestFailures, fenceIntact, fencePrevious, orphansDeleted, ownershipUnverified,
		selfTestRequests, clusterWideGrants, kubeconfigServer, poolHits, poolMisses, poolCreated,
		budgetAdmissions, budgetEvictions, budgetExhaustions,
	}
	registerOnce sync.Once
)

// Register registers the operator's instrumentation metrics on controller-runtime's registry, so
// the manager's metrics endpoint serves them. It is safe to call more than once. The claim
// collector needs a cache and is registered separately:
// metrics.Registry.MustRegister(NewClaimCollector(mgr.GetCache())).
func Register() {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(instrumented...)
		// Known refusal reasons start at zero, so that rate() and increase() see the first one.
		for _, r := range RefusalReasons {
			refusals.WithLabelValues(r)
		}
		orphansDeleted.WithLabelValues()
		for _, a := range []string{ActionBind, ActionHandout, ActionDelete, ActionCount} {
			ownershipUnverified.WithLabelValues(a)
		}
	})
}

// ObserveProvisioned records the time from a claim's creation to its first Ready=True. Call it once
// per claim, on the transition to Ready.
func ObserveProvisioned(class string, d time.Duration) {
	provisioningDuration.WithLabelValues(class).Observe(d.Seconds())
}

// CredentialIssued counts a token written to a claim's credentials Secret: renewal is false for the
// claim's first token and true for a replacement.
func CredentialIssued(class string, renewal bool) {
	kind := KindIssue
	if renewal {
		kind = KindRenewal
	}
	credentialsIssued.WithLabelValues(class, kind).Inc()
}

// CredentialFailed counts a failed attempt to mint a token or to write the credentials Secret.
func CredentialFailed(class string) {
	credentialFailures.WithLabelValues(class).Inc()
}

// Refused counts a claim refused with the given condition reason. Call it on the transition to the
// refusal, not on every reconcile that sees it.
func Refused(reason string) {
	refusals.WithLabelValues(reason).Inc()
}

// Expired counts a claim whose TTL passed.
func Expired(class string) {
	expiries.WithLabelValues(class).Inc()
}

// IdleExpired counts a claim whose idle TTL passed (call Expired too).
func IdleExpired(class string) {
	idleExpiries.WithLabelValues(class).Inc()
}

// Slept counts a namespace put to sleep.
func Slept(class string) {
	sleeps.WithLabelValues(class).Inc()
}

// Woke counts a sleeping namespace woken, and adds the replica-seconds its sleep avoided.
func Woke(class string, replicaSeconds float64) {
	wakes.WithLabelValues(class).Inc()
	sleepReplicaSeconds.WithLabelValues(class).Add(replicaSeconds)
}

// SleepEnded adds the replica-seconds of a sleep that ended without a wake (the claim expired).
func SleepEnded(class string, replicaSeconds float64) {
	sleepReplicaSeconds.WithLabelValues(class).Add(replicaSeconds)
}

// SleepReapplied counts n objects of a sleeping namespace scaled down or suspended again.
func SleepReapplied(class string, n int) {
	sleepReapplied.WithLabelValues(class).Add(float64(n))
}

// ObserveDeletion records the time from a claim's deletionTimestamp to the removal of its finalizer.
func ObserveDeletion(class string, d time.Duration) {
	deletionDuration.WithLabelValues(class).Observe(d.Seconds())
}

// SelfTestFailed counts a permission self-test that found missing or excess permissions.
func SelfTestFailed(class string) {
	selfTestFailures.WithLabelValues(class).Inc()
}

// SetKubeconfigServerInClusterOnly sets the gauge that says handed kubeconfigs name an in-cluster
// address only.
func SetKubeconfigServerInClusterOnly(inClusterOnly bool) {
	v := 0.0
	if inClusterOnly {
		v = 1
	}
	kubeconfigServer.WithLabelValues().Set(v)
}

// SetFenceIntact sets the admission fence gauge to 1 (this release's fence intact) or 0 (missing,
// altered, or only the previous release's), and the previous-fence gauge to 1 while only the previous
// release's fence is in place and still accepted (previousAccepted). Both are absent until the first
// call.
func SetFenceIntact(intact, previousAccepted bool) {
	fenceIntact.WithLabelValues().Set(boolValue(intact))
	fencePrevious.WithLabelValues().Set(boolValue(previousAccepted))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// OwnershipUnverified counts a marked namespace without nsclaim's record that the operator refused to
// act on; action is one of bind, handout, delete, count.
func OwnershipUnverified(action string) {
	ownershipUnverified.WithLabelValues(action).Inc()
}

// OrphanDeleted counts a namespace deleted because its claim no longer existed.
func OrphanDeleted() {
	orphansDeleted.WithLabelValues().Inc()
}

// SelfTestRequest counts a request of the permission self-test (review is one of the Review* values).
func SelfTestRequest(review string) {
	selfTestRequests.WithLabelValues(review).Inc()
}

// SelfTestRequests returns the self-test requests counted so far for a review, for tests and
// benchmarks that compare before and after.
func SelfTestRequests(review string) float64 {
	m := &dto.Metric{}
	if err := selfTestRequests.WithLabelValues(review).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// SetClusterWideGrants sets the number of non-default bindings that grant something to every
// ServiceAccount or every user.
func SetClusterWideGrants(n int) {
	clusterWideGrants.WithLabelValues().Set(float64(n))
}
