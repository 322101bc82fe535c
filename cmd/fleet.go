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
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/nsclaim/nsclaim-operator/internal/controller/fleet"
	fencepkg "github.com/nsclaim/nsclaim-operator/internal/fence"
	"github.com/nsclaim/nsclaim-operator/internal/monitoring"
)

// fleetOptions are the fleet hub's settings (docs/fleet.md).
type fleetOptions struct {
	hub             bool
	namespace       string
	memberNamespace string
}

func bindFleetFlags(o *fleetOptions) {
	flag.BoolVar(&o.hub, "fleet-hub", envBool("NSCLAIM_FLEET_HUB", false),
		"Run as a fleet hub: place each claim on a member cluster registered as a kubeconfig Secret and mirror it there, instead of provisioning it here (NSCLAIM_FLEET_HUB; docs/fleet.md).")
	flag.StringVar(&o.namespace, "fleet-namespace", envOr("NSCLAIM_FLEET_NAMESPACE", ""),
		"Namespace of the member kubeconfig Secrets on a fleet hub; defaults to the leader election namespace (NSCLAIM_FLEET_NAMESPACE).")
	flag.StringVar(&o.memberNamespace, "fleet-member-namespace", envOr("NSCLAIM_FLEET_MEMBER_NAMESPACE", "nsclaim-fleet"),
		"Requester namespace on every member that holds a fleet hub's mirror claims (NSCLAIM_FLEET_MEMBER_NAMESPACE).")
}

// runHub runs the fleet hub: the hub's claim reconciler over members from multicluster-runtime's
// kubeconfig-Secret provider. None of the single-cluster reconcilers run: the hub makes no namespace.
func runHub(o options, cfg *rest.Config) error {
	ns := o.fleet.namespace
	if ns == "" {
		ns = o.leaderElectionNamespace
	}
	if ns == "" {
		return fmt.Errorf("--fleet-hub needs --fleet-namespace (NSCLAIM_FLEET_NAMESPACE) or POD_NAMESPACE: the namespace of the member kubeconfig Secrets")
	}
	mgr, err := newManager(o, cfg, hubCacheOptions(ns))
	if err != nil {
		return err
	}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace: ns, KubeconfigSecretLabel: fleet.MemberLabel, KubeconfigSecretKey: fleet.KubeconfigKey,
		ClusterOptions: []cluster.Option{func(co *cluster.Options) { co.Scheme = scheme }, fleet.MemberCacheOptions(o.fleet.memberNamespace)},
		RESTOptions:    []func(*rest.Config) error{func(c *rest.Config) error { c.QPS, c.Burst = float32(o.qps), o.burst; return nil }},
	})
	mcmgr, err := mcmanager.WithMultiCluster(mgr, provider)
	if err != nil {
		return fmt.Errorf("wrapping the manager for the fleet: %w", err)
	}
	mirrors := &fleet.MirrorWatch{}
	if err := mcmgr.Add(mirrors); err != nil {
		return fmt.Errorf("adding the mirror watch: %w", err)
	}
	if err := provider.SetupWithManager(context.Background(), mcmgr); err != nil {
		return fmt.Errorf("setting up the kubeconfig provider: %w", err)
	}
	shipped, err := fencepkg.Shipped()
	if err != nil {
		return err
	}
	r := &fleet.Reconciler{
		Client:          mgr.GetClient(),
		Registry:        &fleet.Registry{Hub: mgr.GetClient(), Namespace: ns, Clusters: provider, Scheme: scheme, Fence: shipped},
		MemberNamespace: o.fleet.memberNamespace,
		Clock:           clock.RealClock{},
		Mirrors:         mirrors,
		// A Ready claim's hub Secret is written again, unchanged, as often as a single cluster checks
		// its credentials Secret.
		CredentialsResync: o.credentialsCheckInterval,
	}
	if err := r.SetupWithManager(mgr, o.maxConcurrentReconciles); err != nil {
		return err
	}
	if err := mgr.Add(&fleet.Sweeper{Claims: mgr.GetClient(), Hub: mgr.GetAPIReader(), Registry: r.Registry, MemberNamespace: o.fleet.memberNamespace}); err != nil {
		return fmt.Errorf("adding the orphan mirror sweep: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(monitoring.NewFleetCollector(mgr.GetCache())); err != nil {
		return fmt.Errorf("registering fleet metrics: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	setupLog.Info("Starting the fleet hub", "memberSecretsNamespace", ns, "memberNamespace", o.fleet.memberNamespace)
	return mcmgr.Start(ctrl.SetupSignalHandler())
}

// hubCacheOptions caches the hub's claims and classes everywhere, and Secrets only in ns with the
// member label: the hub reads no other Secret (it writes credentials Secrets by server-side apply).
// Nothing the hub caches keeps its managedFields: nothing reads them.
func hubCacheOptions(ns string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{ns: {}}, Label: labels.SelectorFromSet(labels.Set{fleet.MemberLabel: "true"})},
	}, DefaultTransform: cache.TransformStripManagedFields()}
}
