# VERSION defines the project version for the bundle.
VERSION ?= 0.4.0
# PREVIOUS_VERSION is the bundle that VERSION replaces in the catalog's upgrade graph: the newest
# release in hack/releases.txt (hack/releases.sh check), built from its own commit by hack/catalog.sh.
PREVIOUS_VERSION ?= 0.3.0

# CHANNELS define the bundle channels used in the bundle.
CHANNELS ?= alpha,stable
ifneq ($(origin CHANNELS), undefined)
BUNDLE_CHANNELS := --channels=$(CHANNELS)
endif
DEFAULT_CHANNEL ?= stable
ifneq ($(origin DEFAULT_CHANNEL), undefined)
BUNDLE_DEFAULT_CHANNEL := --default-channel=$(DEFAULT_CHANNEL)
endif
BUNDLE_METADATA_OPTS ?= $(BUNDLE_CHANNELS) $(BUNDLE_DEFAULT_CHANNEL)

# IMAGE_TAG_BASE defines the registry namespace and part of the image name for remote images.
IMAGE_TAG_BASE ?= ghcr.io/nsclaim/nsclaim-operator
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)
USE_IMAGE_DIGESTS ?= false
ifeq ($(USE_IMAGE_DIGESTS), true)
	BUNDLE_GEN_FLAGS += --use-image-digests
endif

# Image URL to use all building/pushing image targets
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)

# Get the currently used golang install path (in GOPATH/bin, unless GOBIN is set)
ifeq (,$(shell go env GOBIN))
GOBIN=$(shell go env GOPATH)/bin
else
GOBIN=$(shell go env GOBIN)
endif

# CONTAINER_TOOL defines the container tool to be used for building images.
CONTAINER_TOOL ?= docker

# Setting SHELL to bash allows bash commands to be executed by recipes.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate WebhookConfiguration, ClusterRole and CustomResourceDefinition objects.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="{./api/...,./internal/...,./cmd/...}" output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate code containing DeepCopy, DeepCopyInto, and DeepCopyObject method implementations.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="{./api/...,./internal/...}"

.PHONY: fmt
fmt: ## Run go fmt against code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet against code.
	go vet ./...

# test starts with verify: generated code, CRDs, RBAC, the bundle and docs/metrics.md are regenerated
# and the run fails if that changed anything, so a stale tree fails instead of being fixed silently.
.PHONY: test
test: verify vet lint test-unit test-alerts test-install test-security test-oidc test-metrics test-failover verify-bundle scorecard-local test-kind test-kind-olm test-release-rehearsal ## The whole test suite: verify (nothing generated is stale), vet, lint, unit and envtest suites, alert rule tests, the release manifests installed alone, the security, keyless (OIDC), metrics and failover suites on local clusters, bundle and catalog validation, scorecard, then on kind the e2e suite with the operator as a Pod, test/node's cases and the scorecard as Pods (test-kind, in place of test-local's e2e and test-node: docs/node.md), its install and upgrade by operator-sdk run bundle and an OLM catalog (test-kind-olm, in place of test-node-olm and of test-olm, the same test/olm with OLM as processes and kwok as the node), then the release directory installed as a user downloads it (test-release-rehearsal).

# NSCLAIM_REQUIRE_ENVTEST turns the envtest tests' skip (no control plane) into a failure.
.PHONY: test-unit
test-unit: control-plane ## Run unit tests and the envtest suites (real kube-apiserver and etcd; kube-controller-manager for the claim reconciler), and test/invariants' envtest test.
	KUBEBUILDER_ASSETS="$(KUBE_BIN)" NSCLAIM_REQUIRE_ENVTEST=1 go test $$(go list ./... | grep -v /test/) ./test/invariants/ ./test/bench/ -coverprofile cover.out

.PHONY: test-local
test-local: control-plane build kustomize ## Install from the release manifests alone (install.yaml, fence.yaml: a claim Ready within 30 s of the fence), then run the e2e suite, on a local cluster (started, then stopped, here).
	hack/test-local.sh

.PHONY: test-install
test-install: control-plane build kustomize ## Install from the release manifests alone on a local cluster (install.yaml, then fence.yaml: a claim Ready within 30 s of the fence's apply; hack/test-release.sh). make test-local runs it before the e2e suite.
	hack/test-release.sh

.PHONY: test-security
test-security: control-plane build kustomize ## Attack a local cluster with the operator's own token, with and without the admission fence (config/fence).
	hack/test-security.sh

.PHONY: test-oidc
test-oidc: control-plane build kustomize ## Keyless credentials end to end: a local cluster trusting a test OIDC issuer on loopback; a pipeline with nothing but its ID token claims a namespace (docs/keyless.md).
	hack/test-oidc.sh

.PHONY: test-metrics
test-metrics: control-plane kustomize prometheus ## Scrape a manager on a local cluster with a real Prometheus (bearer token, TLS) and check nsclaim's series.
	PROMETHEUS=$(PROMETHEUS) hack/test-metrics.sh

.PHONY: test-alerts
test-alerts: prometheus ## Run promtool's unit tests of the alerts in config/prometheus, and check every alert has a runbook (docs/runbooks.md) and a firing test.
	PROMTOOL=$(PROMTOOL) go test ./test/metrics/ -run 'TestAlertRules|TestAlertsHaveRunbooks' -count=1

.PHONY: test-fleet
test-fleet: control-plane kustomize ## Run a fleet hub and three member clusters (local control planes), the operator on each member: placement, NotReady and fence-less members, a member away and back (docs/fleet.md).
	hack/test-fleet.sh

.PHONY: test-failover
test-failover: control-plane kustomize ## Run two managers against a local cluster, kill the leader, check the other takes over.
	hack/test-failover.sh

# test-node and test-node-olm (the last suites of `make test`, see docs/node.md) need root, change host
# state (bridge, iptables, cgroups, sysctls; all restored by hack/local-node.sh down), one node per machine.
.PHONY: test-node
test-node: control-plane node kustomize operator-sdk scorecard-test ## Run the operator as a Pod on a real local node (containerd, kubelet, kube-proxy; images assembled here, never pulled) and test it as pipelines inside and outside the cluster use it.
	hack/test-node.sh

.PHONY: test-node-olm
test-node-olm: control-plane node kustomize operator-sdk opm olm cpb busybox ## On a real local node with its image registry: operator-sdk run bundle of PREVIOUS_VERSION and run bundle-upgrade to VERSION, then the same through a catalog Pod and a Subscription, with live claims and tokens (test/olm; OLM's operators as Pods too).
	VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) OLM_VERSION=$(OLM_VERSION) hack/test-node-olm.sh

.PHONY: test-cold
test-cold: ## Run `make test` as CI and a new user do: a fresh clone of HEAD, empty ./bin, Go module and build caches (catches withdrawn pins; prints the minutes).
	hack/test-cold.sh test

.PHONY: metrics-docs
metrics-docs: ## Generate docs/metrics.md from the metrics table in internal/monitoring.
	go run ./internal/monitoring/gen docs/metrics.md

# E2E on kind: creates a kind cluster, loads the manager image (assembled by hack/images.sh as the
# Dockerfile builds it) with `kind load image-archive`, deploys the operator from config/default and runs
# the same e2e cases as test-local (the audit log join too: hack/kind-config.yaml), then test/node's cases
# as test-node runs them, the metrics Service scraped from the node's network namespace, and the
# scorecard as Pods (hack/test-e2e-node.sh; root). KIND_NODE_IMAGE empty: kind's own kindest/node (pulled,
# as in the release workflow); `make test-kind` sets it to the node image built offline here
# (hack/kind-node-image.sh) and runs everything against the project's own dockerd (hack/docker.sh).
KIND_CLUSTER ?= nsclaim-operator-test-e2e
KIND_NODE_IMAGE ?=
# KIND_NODE_CPU_SHARES, when set, is the node container's CPU weight (docker update --cpu-shares): on a
# shared machine (cgroup v1, every host process in the root cgroup) the whole kind cluster otherwise
# weighs as one host process, where the local clusters' etcd, kube-apiserver, controller-manager and
# manager weigh one each (make test-kind sets 8192; docs/node.md).
KIND_NODE_CPU_SHARES ?=

.PHONY: setup-test-e2e
setup-test-e2e: kind ## Set up a Kind cluster for e2e tests if it does not exist
	@case "$$($(KIND) get clusters)" in \
		*"$(KIND_CLUSTER)"*) echo "Kind cluster '$(KIND_CLUSTER)' already exists. Skipping creation." ;; \
		*) echo "Creating Kind cluster '$(KIND_CLUSTER)'..."; \
		   $(KIND) create cluster --name $(KIND_CLUSTER) --config hack/kind-config.yaml --wait 3m $(if $(KIND_NODE_IMAGE),--image $(KIND_NODE_IMAGE)) ;; \
	esac
	$(if $(KIND_NODE_CPU_SHARES),docker update --cpu-shares $(KIND_NODE_CPU_SHARES) $(KIND_CLUSTER)-control-plane >/dev/null)

.PHONY: test-e2e
test-e2e: setup-test-e2e kustomize kubectl operator-sdk scorecard-test ## Run the e2e suite on a Kind cluster (needs Docker), then test/node's cases, the metrics Service scraped from the node and the scorecard as Pods (hack/test-e2e-node.sh).
	MANAGER_IMAGE=$(IMG) hack/images.sh $(CURDIR)/tmp/kind-images manager
	$(KIND) load image-archive $(CURDIR)/tmp/kind-images/manager.tar --name $(KIND_CLUSTER)
	$(KIND) get kubeconfig --name $(KIND_CLUSTER) > $(LOCALBIN)/kind.kubeconfig
	KUBECONFIG=$(LOCALBIN)/kind.kubeconfig $(MAKE) deploy IMG=$(IMG)
	@# The ConfigMap protocol is on for the e2e cases, as a Deployment or Subscription switches it on. The e2e
	@# cases make their own default classes: the starting class `ci` (config/manager) is switched off and removed.
	@# Handed kubeconfigs name the control-plane container's address (kubeadm's cluster-info names its host
	@# name, which the host cannot resolve), as hack/test-e2e-node.sh sets it for test/node.
	KUBECONFIG=$(LOCALBIN)/kind.kubeconfig $(KUBECTL) -n nsclaim-operator-system set env deploy/nsclaim-operator-controller-manager \
		NSCLAIM_REQUESTS_NAMESPACE=nsplease-requests NSCLAIM_REQUESTS_CLASS=nsplease NSCLAIM_STARTING_CLASS=false \
		NSCLAIM_KUBECONFIG_SERVER=https://$$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' $(KIND_CLUSTER)-control-plane):6443
	KUBECONFIG=$(LOCALBIN)/kind.kubeconfig $(KUBECTL) -n nsclaim-operator-system rollout status deploy/nsclaim-operator-controller-manager --timeout=3m
	KUBECONFIG=$(LOCALBIN)/kind.kubeconfig $(KUBECTL) delete namespaceclass ci --ignore-not-found
	@# The API server's audit log (hack/kind-config.yaml), read through the node container's root. E2E_RUN
	@# (a go test -run regexp) runs only some of the e2e cases.
	KUBECONFIG=$(LOCALBIN)/kind.kubeconfig NSCLAIM_E2E_OPERATOR_NAMESPACE=nsclaim-operator-system \
		E2E_AUDIT_LOG=/proc/$$(docker inspect -f '{{.State.Pid}}' $(KIND_CLUSTER)-control-plane)/root/var/log/kubernetes/audit/audit.log \
		go test ./test/e2e/ -v -count=1 -timeout 30m $(if $(E2E_RUN),-run '$(E2E_RUN)')
	@# test/node, the cases of test-node (the operator as a Pod, pipelines in and outside the cluster, the
	@# metrics Service), and the scorecard as Pods.
	KIND=$(KIND) KIND_CLUSTER=$(KIND_CLUSTER) KUBECTL=$(KUBECTL) OPERATOR_SDK=$(OPERATOR_SDK) \
		KUBECONFIG=$(LOCALBIN)/kind.kubeconfig hack/test-e2e-node.sh
	$(MAKE) cleanup-test-e2e

.PHONY: cleanup-test-e2e
cleanup-test-e2e: kind ## Tear down the Kind cluster used for e2e tests
	@$(KIND) delete cluster --name $(KIND_CLUSTER)

# test-kind runs a kind suite (KIND_SUITE: test-e2e) on this machine with nothing pulled: the project's
# own dockerd (hack/docker.sh up), the node image built offline (hack/kind-node-image.sh, cached in
# ./bin), then `kind delete cluster` and `hack/docker.sh down`, which fail if a process, mount,
# network namespace, bridge, veth or iptables chain is left (hack/test-kind.sh). In `make test` in place of
# test-local's e2e run (test-install keeps its release-manifest install) and of test-node, which it
# covers whole (docs/node.md has the figures).
KIND_SUITE ?= test-e2e
.PHONY: test-kind
test-kind: kind control-plane node kubeadm kustomize ## Run KIND_SUITE (test-e2e) on kind here: own dockerd, node image built offline, everything removed and checked after.
	KIND=$(KIND) KIND_CLUSTER=$(KIND_CLUSTER) KUBE_VERSION=$(KUBE_VERSION) KIND_VERSION=$(KIND_VERSION) hack/test-kind.sh $(KIND_SUITE)

# test-kind-olm: test-e2e-olm on kind here, offline (KIND_REGISTRY=local); in `make test` it takes the place
# of test-node-olm, which runs the same test/olm modes (bundle, catalog) on the local node.
.PHONY: test-kind-olm
test-kind-olm: ## Run test-e2e-olm on kind here (make test-kind KIND_SUITE=test-e2e-olm): run bundle / bundle-upgrade, then the catalog path, nothing pulled.
	$(MAKE) test-kind KIND_SUITE=test-e2e-olm

.PHONY: kind-node-image
kind-node-image: control-plane node kubeadm ## Build kind's node image offline (hack/kind-node-image.sh; needs hack/docker.sh up and DOCKER_HOST).
	KUBE_VERSION=$(KUBE_VERSION) KIND_VERSION=$(KIND_VERSION) hack/kind-node-image.sh

.PHONY: test-olm
test-olm: control-plane kustomize operator-sdk opm olm kwok ## Install, upgrade and uninstall through real OLM on a local cluster (OLM's operators as processes, kwok as the node; not in make test: test-kind-olm runs the same test/olm on kind).
	VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) KWOK_VERSION=$(KWOK_VERSION) hack/test-olm.sh

# OLM e2e on kind (hack/test-e2e-olm.sh): `operator-sdk run bundle` of PREVIOUS_VERSION and `run
# bundle-upgrade` to VERSION, then (KIND_REGISTRY=local) the catalog path, checked by the same test/olm
# as test-olm and test-node-olm. KIND_REGISTRY says where the cluster pulls from:
#   ghcr.io (the default: the registry of IMAGE_TAG_BASE; the release workflow) OLM from `operator-sdk
#     olm install`, PREVIOUS_BUNDLE_IMG and BUNDLE_IMG pushed there first, for example:
#       make docker-build docker-push bundle-build bundle-push bundle-build-previous bundle-push-previous
#   local (make test-kind KIND_SUITE=test-e2e-olm; nothing pulled from outside) the images assembled here
#     as test-node-olm assembles them, pushed to a registry run inside the kind node (ghcr.io and
#     registry.access.redhat.com resolve there), OLM's quickstart with OLM's image built here, loaded
#     with `kind load image-archive`.
PREVIOUS_BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(PREVIOUS_VERSION)
OLM_E2E_NAMESPACE ?= nsclaim-operator-system
KIND_REGISTRY ?= $(firstword $(subst /, ,$(IMAGE_TAG_BASE)))

.PHONY: test-e2e-olm
test-e2e-olm: setup-test-e2e operator-sdk kustomize kubectl $(if $(filter local,$(KIND_REGISTRY)),opm olm cpb busybox) ## Install PREVIOUS_VERSION's bundle with OLM on kind, upgrade to this tree's, uninstall (and the catalog path with KIND_REGISTRY=local), with the checks of test-olm (needs Docker).
	$(KIND) get kubeconfig --name $(KIND_CLUSTER) > $(LOCALBIN)/kind.kubeconfig
	KIND=$(KIND) KIND_CLUSTER=$(KIND_CLUSTER) KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) KUBECTL=$(KUBECTL) KUBECONFIG=$(LOCALBIN)/kind.kubeconfig \
		OPERATOR_SDK=$(OPERATOR_SDK) KUSTOMIZE=$(KUSTOMIZE) VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) \
		OLM_VERSION=$(OLM_VERSION) OLM_E2E_NAMESPACE=$(OLM_E2E_NAMESPACE) KIND_REGISTRY=$(KIND_REGISTRY) \
		BUNDLE_IMG=$(BUNDLE_IMG) PREVIOUS_BUNDLE_IMG=$(PREVIOUS_BUNDLE_IMG) TOOLS_BIN=$(LOCALBIN) OPM=$(OPM) \
		hack/test-e2e-olm.sh
	$(MAKE) cleanup-test-e2e

.PHONY: lint
lint: golangci-lint ## Run golangci-lint linter
	$(GOLANGCI_LINT) run

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint linter and perform fixes
	$(GOLANGCI_LINT) run --fix

.PHONY: lint-config
lint-config: golangci-lint ## Verify golangci-lint linter configuration
	$(GOLANGCI_LINT) config verify

# VERIFY_PATHS are the paths whose content verify compares before and after regenerating: everything
# a generator or go fmt writes. The comparison uses a throw-away index (git write-tree of the working
# tree, untracked files included), so it works on a tree with uncommitted changes too and never
# touches the real index: verify fails only if regenerating changed something.
VERIFY_PATHS ?= api cmd internal test hack config bundle bundle.Dockerfile docs PROJECT go.mod go.sum
VERIFY_INDEX ?= $(CURDIR)/tmp/verify.index
define tree-of-working-copy
cp "$$(git rev-parse --git-path index)" $(VERIFY_INDEX) && \
GIT_INDEX_FILE=$(VERIFY_INDEX) git add -A -- $(VERIFY_PATHS) && GIT_INDEX_FILE=$(VERIFY_INDEX) git write-tree
endef

.PHONY: verify
verify: controller-gen kustomize operator-sdk opm actionlint ## Regenerate code, CRDs, RBAC, the bundle and docs/metrics.md, run go fmt, validate the catalog; fail if anything changed or go.mod is not tidy; lint the GitHub workflows; check the release notes and history.
	@mkdir -p $(dir $(VERIFY_INDEX))
	@before=$$($(tree-of-working-copy)); test -n "$$before"; \
	$(MAKE) --no-print-directory manifests generate fmt bundle metrics-docs catalog-validate; \
	after=$$($(tree-of-working-copy)); test -n "$$after"; rm -f $(VERIFY_INDEX); \
	if [ "$$before" != "$$after" ]; then \
		echo "Generated files are out of date; run 'make manifests generate fmt bundle metrics-docs' and commit:"; \
		git --no-pager diff --stat "$$before" "$$after"; git --no-pager diff "$$before" "$$after" | head -200; exit 1; fi; \
	echo "verify: nothing generated is out of date"
	@go mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit"; exit 1; }
	$(MAKE) --no-print-directory lint-workflows
	hack/releases.sh check

# The workflows in .github/workflows cannot run here; actionlint checks their syntax, expressions,
# action inputs and (with shellcheck, when installed) their run scripts.
.PHONY: lint-workflows
lint-workflows: actionlint ## Lint the GitHub Actions workflows with actionlint.
	$(ACTIONLINT) -color=false
	@echo "lint-workflows: actionlint found nothing in .github/workflows"

# RELEASE_NOTES receives the CHANGELOG.md section of VERSION, the body of the GitHub release.
RELEASE_NOTES ?= $(CURDIR)/tmp/release-notes-v$(VERSION).md

.PHONY: release-notes
release-notes: ## Write the CHANGELOG.md section of VERSION to RELEASE_NOTES (tmp/release-notes-vVERSION.md) and print it.
	@mkdir -p $(dir $(RELEASE_NOTES))
	hack/releases.sh notes $(VERSION) > $(RELEASE_NOTES)
	@cat $(RELEASE_NOTES)

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build manager binary.
	go build -o bin/manager ./cmd

.PHONY: plugin
plugin: ## Build the kubectl-nsclaim plugin into bin/kubectl-nsclaim (put it on the PATH to use it as `kubectl nsclaim`).
	go build -o bin/kubectl-nsclaim ./cmd/kubectl-nsclaim

# PLUGIN_PLATFORMS are the os/arch pairs of the plugin's release archives; PLUGIN_DIST receives them.
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
PLUGIN_DIST ?= $(CURDIR)/dist/plugin

.PHONY: plugin-dist
plugin-dist: ## Build the plugin's release archives for PLUGIN_PLATFORMS, their sha256 checksums and the krew manifest (plugins/krew) into PLUGIN_DIST.
	hack/plugin-dist.sh $(VERSION) $(PLUGIN_DIST) $(PLUGIN_PLATFORMS)

.PHONY: run
run: manifests generate fmt vet ## Run a controller from your host against the cluster in KUBECONFIG.
	go run ./cmd

.PHONY: docker-build
docker-build: ## Build docker image with the manager.
	$(CONTAINER_TOOL) build -t ${IMG} .

.PHONY: docker-push
docker-push: ## Push docker image with the manager.
	$(CONTAINER_TOOL) push ${IMG}

# The manifests a release publishes: install.yaml (config/release: CRDs, RBAC, the Deployment with IMG;
# no fence), fence.yaml (config/fence/validating; Kubernetes 1.30+), fence-keyless.yaml
# (config/fence/keyless; 1.36+) and monitoring.yaml (config/monitoring: ServiceMonitor, PrometheusRule).
# build-installer and release-dir render them with the same command
# (hack/release-manifests.sh) into the same directory, RELEASE_DIR: one install.yaml.
RELEASE_DIR ?= $(CURDIR)/dist/release-v$(VERSION)
.PHONY: release-manifests
release-manifests: manifests kustomize ## Render the release's install.yaml, fence.yaml, fence-keyless.yaml and monitoring.yaml into RELEASE_DIR.
	mkdir -p $(RELEASE_DIR)
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	KUSTOMIZE=$(KUSTOMIZE) hack/release-manifests.sh $(RELEASE_DIR)
	@echo "release manifests of v$(VERSION) (image $(IMG)) in $(RELEASE_DIR)"

.PHONY: build-installer
build-installer: release-manifests ## Render the release's install.yaml (and its fence.yaml, fence-keyless.yaml, monitoring.yaml) into RELEASE_DIR, as make release-dir does.
	@echo "installer: $(RELEASE_DIR)/install.yaml"

# release-dir builds everything a release page and a registry hold into RELEASE_DIR (hack/release-dir.sh
# lists it): the manifests, the dashboard, the plugin's archives, checksums and krew manifest, and the
# manager (linux/amd64 and linux/arm64), bundle and catalog images as OCI image layout tarballs. The
# release workflow publishes exactly this directory; make test-release-rehearsal consumes only it.
.PHONY: release-dir
# MANAGER_ARCHS are the linux architectures of the manager image's index.
MANAGER_ARCHS ?= amd64 arm64
release-dir: manifests kustomize operator-sdk opm controller-gen cyclonedx-gomod ## Build the whole release of VERSION (manifests, dashboard, plugin archives, manager/bundle/catalog images, the manager's SBOM) into RELEASE_DIR.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) IMG=$(IMG) BUNDLE_IMG=$(BUNDLE_IMG) CATALOG_IMG=$(CATALOG_IMG) \
		PLUGIN_PLATFORMS="$(PLUGIN_PLATFORMS)" MANAGER_ARCHS="$(MANAGER_ARCHS)" KUSTOMIZE=$(KUSTOMIZE) OPM=$(OPM) TOOLS_BIN=$(LOCALBIN) CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) \
		IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) hack/release-dir.sh $(RELEASE_DIR)

# test-release-rehearsal installs the release as a user downloads it, from RELEASE_DIR alone: files
# from an HTTP server on loopback, images from the local node's registry (hack/test-release-rehearsal.sh).
# In make test it builds the release for the machine's own platform only (REHEARSAL_PLATFORM): the five
# other plugin platforms and the arm64 manager are cross-compiles of the same code that would add
# about half an hour on 2 cores with cold caches; `make release-dir` and the release workflow build them all.
REHEARSAL_PLATFORM ?= linux/amd64
# PREVIOUS_RELEASE_DIR receives PREVIOUS_VERSION's release directory, rebuilt from its recorded commit
# (hack/previous-release-dir.sh), which the rehearsal upgrades from.
PREVIOUS_RELEASE_DIR ?= $(CURDIR)/dist/release-v$(PREVIOUS_VERSION)
.PHONY: test-release-rehearsal
test-release-rehearsal: PLUGIN_PLATFORMS = $(REHEARSAL_PLATFORM)
test-release-rehearsal: MANAGER_ARCHS = $(notdir $(REHEARSAL_PLATFORM))
test-release-rehearsal: release-dir control-plane node kustomize krew olm cpb busybox opm prometheus controller-gen ## Rehearse the release of RELEASE_DIR end to end on a local node: the upgrade from PREVIOUS_VERSION's directory, install.yaml and fence.yaml from served URLs, the manager image pulled from a registry, a claim, the plugin downloaded and checksummed and installed by krew, uninstall per the README, OLM from the catalog image with and without the Prometheus Operator's CRDs.
	IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) TOOLS_BIN=$(LOCALBIN) hack/previous-release-dir.sh $(PREVIOUS_VERSION) $(PREVIOUS_RELEASE_DIR)
	VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) IMG=$(IMG) MANAGER_ARCHS="$(MANAGER_ARCHS)" KREW=$(KREW) \
		PROMETHEUS=$(PROMETHEUS) CONTROLLER_GEN=$(CONTROLLER_GEN) OLM_VERSION=$(OLM_VERSION) \
		hack/test-release-rehearsal.sh $(RELEASE_DIR) $(PREVIOUS_RELEASE_DIR)

##@ Local cluster (etcd, kube-apiserver, kube-controller-manager as processes; no container engine needed)

# LOCAL_CLUSTER_DIR holds the PKI, data, logs and PIDs; ports are set by the variables of
# hack/local-cluster.sh (APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT, CONTROLLER_MANAGER_PORT).
LOCAL_CLUSTER_DIR ?= $(CURDIR)/tmp/local-cluster
export LOCAL_CLUSTER_DIR
export KUBE_BIN_DIR = $(KUBE_BIN)

.PHONY: local-up
local-up: control-plane build kustomize ## Start a local cluster, install CRDs and RBAC, run the operator under its own identity, apply the samples and wait for the sample claim to be Ready.
	hack/local-up.sh

.PHONY: local-down
local-down: ## Stop the operator and the local cluster started by local-up (by saved PID).
	hack/local-operator.sh stop
	hack/local-cluster.sh down

# Benchmarks and chaos runs use a cluster of their own (reset at the start, stopped at the end), with
# audit logging on. BENCH_ARGS are test/bench flags, e.g. BENCH_ARGS="--bursts=100 --restarts= --scales="
# (bench) or BENCH_ARGS="--claims=50 --scenarios=leader,children" (chaos);
# OPERATOR_ARGS are manager flags, e.g. OPERATOR_ARGS="--kube-api-qps=200 --kube-api-burst=400".
BENCH_CLUSTER_DIR ?= $(CURDIR)/tmp/bench-cluster
BENCH_ARGS ?=

.PHONY: bench
bench: control-plane kustomize ## Measure nsclaim against ceilings run as its ServiceAccount (its objects and rules reviews alone, then until kube-controller-manager made the namespace usable; nsplease's ten writes), single-claim latency and the issues' targets (printed, never asserted; results in tmp/bench/results-bench.md).
	LOCAL_CLUSTER_DIR=$(BENCH_CLUSTER_DIR) hack/bench.sh bench $(BENCH_ARGS)

# bench-fleet starts a hub and three members as make test-fleet does; BENCH_ARGS are test/bench flags,
# e.g. BENCH_ARGS="--fleet-claims=100 --fleet-burst=500".
.PHONY: bench-fleet
bench-fleet: control-plane kustomize ## Measure the fleet hub's RSS per member cluster and a burst across three members against a raw client's usable ceiling on the same members (printed, never asserted; docs/benchmarks.md).
	hack/bench-fleet.sh $(BENCH_ARGS)

# bench-cache needs no cluster: the protobuf (JSON for claims) the API server would send, decoded and
# kept as the manager's informers keep them (docs/benchmarks-history.md, "Memory, round 8").
.PHONY: bench-cache
bench-cache: ## Print the heap the manager's caches spend on one Ready claim (its claim, namespace, children and the namespace's default ServiceAccount) and the least any cached object costs (printed, never asserted).
	go test ./internal/watchcache/ -run '^$$' -bench BenchmarkCachedObjectCost -benchtime $(or $(BENCH_CLAIMS),10000)x

# bench-plugin runs test/e2e's BenchmarkPluginClaimToKubeconfig on a cluster of make test-local's kind
# (TEST_*_PORT, TEST_CLUSTER_DIR): the plugin's claim-to-kubeconfig wall time next to the claim's
# created-to-Ready time, one claim at a time on an idle cluster (printed, never asserted).
.PHONY: bench-plugin
bench-plugin: control-plane build kustomize ## Print the plugin's claim-to-kubeconfig wall time and the claim's created-to-Ready time (E2E_BENCHTIME claims, default 5x).
	E2E_RUN='^$$' E2E_BENCH=BenchmarkPluginClaimToKubeconfig hack/test-local.sh

.PHONY: chaos
chaos: control-plane kustomize ## Kill the leader, restart kube-apiserver and etcd, delete children during bursts (go test ./test/bench -run TestChaos); fail on a broken invariant.
	LOCAL_CLUSTER_DIR=$(BENCH_CLUSTER_DIR) hack/chaos.sh $(BENCH_ARGS)

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize kubectl ## Install CRDs into the K8s cluster specified in ~/.kube/config.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: manifests kustomize kubectl ## Uninstall CRDs from the K8s cluster specified in ~/.kube/config.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

# deploy and undeploy run the kubectl that make control-plane builds (KUBECTL), so a fresh clone has it.
.PHONY: deploy
deploy: manifests kustomize kubectl ## Deploy controller to the K8s cluster specified in ~/.kube/config (IMG must be an image you pushed unless VERSION is a release).
	@if [ "$(origin IMG)" = "file" ] && ! hack/releases.sh list | grep -q "^$(VERSION) "; then \
	  echo "make deploy: $(IMG) is not published (VERSION $(VERSION) is not released yet): build and push your own image and pass IMG=..., or install a release's install.yaml (README)" >&2; exit 1; fi
	cd config/manager && $(KUSTOMIZE) edit set image controller=${IMG}
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: kustomize kubectl ## Undeploy controller from the K8s cluster specified in ~/.kube/config.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

##@ Dependencies
# Every tool is built from its Go module at a pinned version into ./bin, named by version, so a second
# run reuses it and a version bump builds the new one. Nothing is downloaded from a release page.

LOCALBIN ?= $(CURDIR)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool Versions
KUSTOMIZE_VERSION ?= v5.8.2
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
KIND_VERSION ?= v0.33.0
OPERATOR_SDK_VERSION ?= v1.42.2
OPM_VERSION ?= v1.73.0
OLM_VERSION ?= v0.46.0
# OLM_GIT_COMMIT is the commit of OLM_VERSION, stamped into olm and catalog like OLM's release build.
OLM_GIT_COMMIT ?= 0368a3f9dff1fa14c8645b867fba25c3be9df845
KWOK_VERSION ?= v0.8.0
# ACTIONLINT_VERSION lints .github/workflows in make verify (the workflows cannot run here).
ACTIONLINT_VERSION ?= v1.7.12
# KREW_VERSION is the krew that test-release-rehearsal installs the plugin with (krew install --manifest --archive).
KREW_VERSION ?= v0.4.3
# CYCLONEDX_GOMOD_VERSION writes the release directory's SBOM of the manager (make release-dir).
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
# KUBE_VERSION is the control plane (etcd, kube-apiserver, kube-controller-manager, kubectl) built
# from hack/kube and hack/etcd for envtest and the local cluster. Bumping it means regenerating
# hack/kube/go.mod with hack/kube/gen-gomod.sh.
KUBE_VERSION ?= 1.37.1

# PROMETHEUS_VERSION is the upstream version of Debian's prometheus package (prometheus and promtool),
# unpacked into ./bin for the metrics and alert tests. Only the upstream version is pinned: Debian
# serves one revision per suite and a point release replaces it (2.42.0+ds-5+b6 vanished for
# 2.42.0+ds-5+deb12u1), so hack/fetch-deb-tool.sh takes the revision that is served and checks that
# both binaries report PROMETHEUS_VERSION. Why not the Go module: prometheus v0.42.0's module leaves
# out the web UI's built assets, and a build without them needs Node.js and npm (promtool alone would
# build, but test-metrics runs the server too).
PROMETHEUS_VERSION ?= 2.42.0
# BUSYBOX_VERSION is the upstream version of Debian's busybox-static: the shell, cat, gzip and cp that
# operator-sdk's registry Pod and OLM's bundle unpack Job run (test-node-olm's olm-tools image).
BUSYBOX_VERSION ?= 1.35.0

## Tool Binaries
PROMETHEUS ?= $(LOCALBIN)/prometheus-$(PROMETHEUS_VERSION)/prometheus
PROMTOOL ?= $(LOCALBIN)/prometheus-$(PROMETHEUS_VERSION)/promtool
KUBE_BIN ?= $(LOCALBIN)/k8s/$(KUBE_VERSION)-linux-amd64
KUBECTL ?= $(KUBE_BIN)/kubectl
KUSTOMIZE ?= $(LOCALBIN)/kustomize
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
KIND ?= $(LOCALBIN)/kind
OPERATOR_SDK ?= $(LOCALBIN)/operator-sdk
SCORECARD_TEST ?= $(LOCALBIN)/scorecard-test
OPM ?= $(LOCALBIN)/opm
OLM ?= $(LOCALBIN)/olm
OLM_CATALOG ?= $(LOCALBIN)/catalog
KWOK ?= $(LOCALBIN)/kwok
ACTIONLINT ?= $(LOCALBIN)/actionlint
KREW ?= $(LOCALBIN)/krew
CYCLONEDX_GOMOD ?= $(LOCALBIN)/cyclonedx-gomod
BUSYBOX ?= $(LOCALBIN)/busybox-$(BUSYBOX_VERSION)/busybox
OLM_CPB ?= $(LOCALBIN)/cpb

.PHONY: kubectl
kubectl: ## Build kubectl of KUBE_VERSION from source (once per version), the kubectl deploy and install run (unless KUBECTL names another).
	@if [ "$(KUBECTL)" = "$(KUBE_BIN)/kubectl" ]; then hack/build-control-plane.sh $(KUBE_BIN) v$(KUBE_VERSION) kubectl; \
	else command -v "$(KUBECTL)" >/dev/null || { echo "KUBECTL=$(KUBECTL) is not a command" >&2; exit 1; }; fi

.PHONY: kubeadm
kubeadm: ## Build kubeadm of KUBE_VERSION from source (once per version), for the kind node image.
	hack/build-control-plane.sh $(KUBE_BIN) v$(KUBE_VERSION) kubeadm

.PHONY: control-plane
control-plane: $(KUBE_BIN)/kube-apiserver ## Build etcd, kube-apiserver, kube-controller-manager and kubectl from source (once per version).
$(KUBE_BIN)/kube-apiserver:
	hack/build-control-plane.sh $(KUBE_BIN) v$(KUBE_VERSION)

# The local node's binaries (hack/build-node.sh): kubelet, kube-proxy and kube-scheduler of
# KUBE_VERSION next to the control plane; containerd, the CNI plugins, CoreDNS and crictl at the
# versions pinned in hack/tools/{containerd,cni,coredns,crictl}/go.mod, each in bin/<name>-<version>.
# runc, iptables and conntrack come from Debian (hack/node-deps.sh).
# Both scripts are no-ops when everything is there.
.PHONY: node
node: $(LOCALBIN) ## Build the local node's binaries from source (once per version) and install runc, iptables, conntrack from Debian.
	hack/node-deps.sh
	hack/build-node.sh $(LOCALBIN) v$(KUBE_VERSION)

.PHONY: prometheus
prometheus: $(PROMETHEUS) ## Unpack Debian's prometheus package (prometheus, promtool) of PROMETHEUS_VERSION into ./bin if necessary.
$(PROMETHEUS): $(LOCALBIN)
	hack/fetch-deb-tool.sh prometheus $(PROMETHEUS_VERSION) $(LOCALBIN)/prometheus-$(PROMETHEUS_VERSION) prometheus promtool

.PHONY: busybox
busybox: $(BUSYBOX) ## Unpack Debian's static busybox of BUSYBOX_VERSION into ./bin if necessary.
$(BUSYBOX): $(LOCALBIN)
	VERSION_FLAG=--help hack/fetch-deb-tool.sh busybox-static $(BUSYBOX_VERSION) $(LOCALBIN)/busybox-$(BUSYBOX_VERSION) busybox

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Download kustomize locally if necessary.
$(KUSTOMIZE): $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Download controller-gen locally if necessary.
$(CONTROLLER_GEN): $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Download golangci-lint locally if necessary.
$(GOLANGCI_LINT): $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: kind
kind: $(KIND) ## Build kind locally if necessary.
$(KIND): $(LOCALBIN)
	$(call go-install-tool,$(KIND),sigs.k8s.io/kind,$(KIND_VERSION))

# go-install-tool will 'go install' any package with custom target and name of binary, if it doesn't exist
# $1 - target path with name of binary
# $2 - package url which can be installed
# $3 - specific version of package
define go-install-tool
@[ -f "$(1)-$(3)" ] && [ "$$(realpath -- "$(1)" 2>/dev/null)" = "$$(realpath -- "$(1)-$(3)")" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Building $${package} from source" ;\
rm -f $(1) ;\
GOBIN=$(LOCALBIN) go install $${package} ;\
mv $(1) $(1)-$(3) ;\
} ;\
ln -sf $$(realpath $(1)-$(3)) $(1)
endef

# go-build-wrapped-tool builds a tool pinned in a wrapper module under hack/tools (the module proxy
# refuses version listings of operator-framework modules, so `go install mod@version` cannot be used).
# $1 - target path with name of binary
# $2 - wrapper module directory
# $3 - package
# $4 - version (for the file name)
# $5 - extra go build flags
# $6 - CGO_ENABLED (default 0)
define go-build-wrapped-tool
@[ -f "$(1)-$(4)" ] && [ "$$(realpath -- "$(1)" 2>/dev/null)" = "$$(realpath -- "$(1)-$(4)")" ] || { \
set -e; \
echo "Building $(3)@$(4) from source" ;\
rm -f $(1) ;\
CGO_ENABLED=$(or $(6),0) go -C $(2) build $(5) -o $(1)-$(4) $(3) ;\
} ;\
ln -sf $$(realpath $(1)-$(4)) $(1)
endef

OPERATOR_SDK_PKG = github.com/operator-framework/operator-sdk
# Stamped like operator-sdk's own release build, or generated projects report version "unknown".
OPERATOR_SDK_BUILD_FLAGS = -tags=containers_image_openpgp -ldflags "-X $(OPERATOR_SDK_PKG)/internal/version.Version=$(OPERATOR_SDK_VERSION) -X $(OPERATOR_SDK_PKG)/internal/version.GitVersion=$(OPERATOR_SDK_VERSION) -X $(OPERATOR_SDK_PKG)/internal/version.GitCommit=6001c29067051e1a04e829ea033988b904d1845e -X $(OPERATOR_SDK_PKG)/internal/version.KubernetesVersion=v1.33.1 -X $(OPERATOR_SDK_PKG)/internal/version.ImageVersion=$(OPERATOR_SDK_VERSION)"
OPM_PKG = github.com/operator-framework/operator-registry
OPM_BUILD_FLAGS = -tags=json1,containers_image_openpgp -ldflags "-X $(OPM_PKG)/cmd/opm/version.opmVersion=$(OPM_VERSION) -X $(OPM_PKG)/cmd/opm/version.gitCommit=19af4a361697de502ae43b0ab5b072973cbe4655 -X $(OPM_PKG)/cmd/opm/version.buildDate=2026-07-23T19:28:03Z"

.PHONY: operator-sdk
operator-sdk: $(OPERATOR_SDK) ## Build operator-sdk locally if necessary.
$(OPERATOR_SDK): $(LOCALBIN) hack/tools/operator-sdk/go.mod
	$(call go-build-wrapped-tool,$(OPERATOR_SDK),hack/tools/operator-sdk,github.com/operator-framework/operator-sdk/cmd/operator-sdk,$(OPERATOR_SDK_VERSION),$(OPERATOR_SDK_BUILD_FLAGS))

.PHONY: scorecard-test
scorecard-test: $(SCORECARD_TEST) ## Build operator-sdk's scorecard test program locally if necessary.
$(SCORECARD_TEST): $(LOCALBIN) hack/tools/operator-sdk/go.mod
	$(call go-build-wrapped-tool,$(SCORECARD_TEST),hack/tools/operator-sdk,github.com/operator-framework/operator-sdk/images/scorecard-test,$(OPERATOR_SDK_VERSION),$(OPERATOR_SDK_BUILD_FLAGS))

.PHONY: opm
opm: $(OPM) ## Build opm locally if necessary.
$(OPM): $(LOCALBIN) hack/tools/opm/go.mod
	$(call go-build-wrapped-tool,$(OPM),hack/tools/opm,github.com/operator-framework/operator-registry/cmd/opm,$(OPM_VERSION),$(OPM_BUILD_FLAGS),1)

OLM_PKG = github.com/operator-framework/operator-lifecycle-manager
OLM_BUILD_FLAGS = -tags=containers_image_openpgp -ldflags "-s -w -X $(OLM_PKG)/pkg/version.OLMVersion=$(OLM_VERSION) -X $(OLM_PKG)/pkg/version.GitCommit=$(OLM_GIT_COMMIT)"

.PHONY: olm
olm: $(OLM) $(OLM_CATALOG) ## Build OLM's olm and catalog operators locally if necessary (processes in test-olm, Pods in test-node-olm).
$(OLM): $(LOCALBIN) hack/tools/olm/go.mod
	$(call go-build-wrapped-tool,$(OLM),hack/tools/olm,$(OLM_PKG)/cmd/olm,$(OLM_VERSION),$(OLM_BUILD_FLAGS))
$(OLM_CATALOG): $(LOCALBIN) hack/tools/olm/go.mod
	$(call go-build-wrapped-tool,$(OLM_CATALOG),hack/tools/olm,$(OLM_PKG)/cmd/catalog,$(OLM_VERSION),$(OLM_BUILD_FLAGS))

.PHONY: cpb
cpb: $(OLM_CPB) ## Build OLM's cpb (copies a bundle image's manifests in OLM's unpack Job) locally if necessary.
$(OLM_CPB): $(LOCALBIN) hack/tools/olm/go.mod
	$(call go-build-wrapped-tool,$(OLM_CPB),hack/tools/olm,$(OLM_PKG)/util/cpb,$(OLM_VERSION),-trimpath -ldflags "-s -w")

.PHONY: actionlint
actionlint: $(ACTIONLINT) ## Build actionlint (GitHub Actions workflow linter) locally if necessary.
$(ACTIONLINT): $(LOCALBIN)
	$(call go-install-tool,$(ACTIONLINT),github.com/rhysd/actionlint/cmd/actionlint,$(ACTIONLINT_VERSION))

.PHONY: krew
krew: $(KREW) ## Build krew (kubectl's plugin manager) locally if necessary.
$(KREW): $(LOCALBIN)
	$(call go-install-tool,$(KREW),sigs.k8s.io/krew/cmd/krew,$(KREW_VERSION))

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Build cyclonedx-gomod (the release's SBOM) locally if necessary.
$(CYCLONEDX_GOMOD): $(LOCALBIN)
	$(call go-install-tool,$(CYCLONEDX_GOMOD),github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod,$(CYCLONEDX_GOMOD_VERSION))

.PHONY: kwok
kwok: $(KWOK) ## Build kwok (simulated nodes, so OLM's Deployments report Running without a kubelet) locally if necessary.
$(KWOK): $(LOCALBIN)
	$(call go-install-tool,$(KWOK),sigs.k8s.io/kwok/cmd/kwok,$(KWOK_VERSION))

##@ Bundle

.PHONY: bundle
bundle: manifests kustomize operator-sdk ## Generate bundle manifests and metadata, then validate generated files.
	$(OPERATOR_SDK) generate kustomize manifests -q --interactive=false
	@# generate bundle never removes a manifest that config/manifests no longer renders.
	rm -rf bundle/manifests
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS)
	@# createdAt changes on every run; drop it so that `make verify` is reproducible.
	sed -i '/^    createdAt: /d' bundle/manifests/nsclaim-operator.clusterserviceversion.yaml
	$(OPERATOR_SDK) bundle validate ./bundle

.PHONY: verify-bundle
verify-bundle: operator-sdk ## Validate the bundle with the operatorframework suite.
	$(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework

.PHONY: scorecard-local
scorecard-local: scorecard-test ## Run the scorecard's basic and OLM checks against ./bundle without a cluster.
	hack/scorecard-local.sh $(SCORECARD_TEST)

.PHONY: bundle-build
bundle-build: ## Build the bundle image.
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(MAKE) docker-push IMG=$(BUNDLE_IMG)

.PHONY: bundle-build-previous
bundle-build-previous: kustomize controller-gen operator-sdk ## Build the bundle image of PREVIOUS_VERSION (made by its own commit: hack/releases.sh build).
	rm -rf $(CURDIR)/tmp/bundle-previous && mkdir -p $(CURDIR)/tmp/bundle-previous
	dir=$$(IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) TOOLS_BIN=$(LOCALBIN) hack/releases.sh build $(PREVIOUS_VERSION)) && \
		cp -rL $$dir/bundle $(CURDIR)/tmp/bundle-previous/bundle
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(PREVIOUS_BUNDLE_IMG) $(CURDIR)/tmp/bundle-previous

.PHONY: bundle-push-previous
bundle-push-previous: ## Push the bundle image of PREVIOUS_VERSION.
	$(MAKE) docker-push IMG=$(PREVIOUS_BUNDLE_IMG)

# A comma-separated list of bundle images (e.g. make catalog-build BUNDLE_IMGS=example.com/operator-bundle:v0.1.0,example.com/operator-bundle:v0.2.0).
BUNDLE_IMGS ?= $(BUNDLE_IMG)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
ifneq ($(origin CATALOG_BASE_IMG), undefined)
FROM_INDEX_OPT := --from-index $(CATALOG_BASE_IMG)
endif

# CATALOG_DIR receives the file-based catalog rendered offline from ./bundle (VERSION) and the bundle of
# the release PREVIOUS_VERSION made by its own commit (hack/releases.sh build); see hack/catalog.sh.
CATALOG_DIR ?= $(CURDIR)/tmp/catalog

.PHONY: catalog
catalog: kustomize controller-gen operator-sdk opm ## Render the file-based catalog (PREVIOUS_VERSION and VERSION, channels alpha and stable) into CATALOG_DIR, offline.
	VERSION=$(VERSION) PREVIOUS_VERSION=$(PREVIOUS_VERSION) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) \
		OPM=$(OPM) TOOLS_BIN=$(LOCALBIN) hack/catalog.sh $(CATALOG_DIR)

.PHONY: catalog-validate
catalog-validate: catalog ## Validate the file-based catalog with opm.
	$(OPM) validate $(CATALOG_DIR)

.PHONY: catalog-build
catalog-build: opm ## Build a catalog image.
	$(OPM) index add --container-tool $(CONTAINER_TOOL) --mode semver --tag $(CATALOG_IMG) --bundles $(BUNDLE_IMGS) $(FROM_INDEX_OPT)

.PHONY: catalog-push
catalog-push: ## Push a catalog image.
	$(MAKE) docker-push IMG=$(CATALOG_IMG)
