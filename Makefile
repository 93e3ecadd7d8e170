# archfilter — kube-scheduler with the ArchFilter plugin.
# `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

BIN_DIR        ?= bin
BINARY         ?= $(BIN_DIR)/archfilter-scheduler
# The k8s1.35 flavour: Kubernetes v1.35 plus sigs.k8s.io/scheduler-plugins,
# built from the same tree with its own module file and build tag.
FLAVOUR_K8S135 := k8s1.35
K8S135_GOFLAGS := -modfile=go.k8s1.35.mod -tags=k8s1.35
BINARY_K8S135  ?= $(BIN_DIR)/archfilter-scheduler-$(FLAVOUR_K8S135)
BINARY_PLACEMENT ?= $(BIN_DIR)/archfilter-placement
IMAGE          ?= archfilter/archfilter-scheduler
PLATFORMS      ?= linux/amd64,linux/arm64,linux/ppc64le,linux/s390x
GO             ?= go
# The Go toolchain of every build and test: the go command fetches it from the
# module proxy once per machine. A machine's own Go (and GOTOOLCHAIN=local, its
# default here) would otherwise build with whatever it is; go.mod's toolchain
# line, hack/lib/go.sh, .ci/run and the README say the same (test/toolchain).
export GOTOOLCHAIN := go1.27.3
# Static binaries, and one build configuration for everything: tests, the
# binaries and the control-plane tools built from this module graph
# (hack/cluster/tools.sh) then share Go's build cache instead of compiling
# Kubernetes once per cgo setting. The race detector needs cgo (test-race).
export CGO_ENABLED ?= 0
# Binaries carry no build-machine paths (reproducible images). make test drops
# it for the binaries it tests, which then reuse what the unit tests compiled
# instead of compiling Kubernetes again (about 4 minutes a flavour on 2 cores).
TRIMPATH       ?= -trimpath
GOTESTFLAGS    ?=
# go test's own vet pass (a subset of go vet's analyzers) computes vet facts
# for every dependency, once per build configuration (each flavour, -race, each
# test graph): minutes from empty caches. make test sets -vet=off because its
# verify stage runs the full go vet on every package of this module, in both
# flavours (charts/archfilter/test, a module of its own, and test-race, whose
# race-only files go vet does not see, keep go test's vet).
GOTESTVET      ?=
FLAVOUR        ?= main

# Versions are stamped into the binary: archfilter's own from git, and the
# Kubernetes version from the module graph, so --version tells the truth.
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
GIT_COMMIT     ?= $(shell git rev-parse --verify --quiet HEAD 2>/dev/null || echo unknown)
# The commit's time, not the clock's: two builds of one commit are identical.
BUILD_DATE     ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:'%Y-%m-%dT%H:%M:%SZ' 2>/dev/null || date -u +'%Y-%m-%dT%H:%M:%SZ')
CV             := k8s.io/component-base/version
AV             := github.com/archfilter/archfilter/pkg/version
# ldflags_for KUBE_VERSION ARCHFILTER_VERSION: the Kubernetes version of the
# module graph, and archfilter's own (with the flavour suffix for k8s1.35).
kube_major      = $(word 1,$(subst ., ,$(patsubst v%,%,$(1))))
kube_minor      = $(word 2,$(subst ., ,$(patsubst v%,%,$(1))))
ldflags_for     = -s -w \
	-X $(CV).gitVersion=$(1) -X $(CV).gitMajor=$(call kube_major,$(1)) -X $(CV).gitMinor=$(call kube_minor,$(1)) \
	-X $(CV).gitCommit= -X $(CV).gitTreeState=clean -X $(CV).buildDate=$(BUILD_DATE) \
	-X $(AV).Version=$(2) -X $(AV).GitCommit=$(GIT_COMMIT) -X $(AV).BuildDate=$(BUILD_DATE)
KUBE_VERSION   := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_VERSION_K8S135 := $(shell $(GO) list -modfile=go.k8s1.35.mod -m -f '{{.Version}}' k8s.io/kubernetes)
LDFLAGS        := $(call ldflags_for,$(KUBE_VERSION),$(VERSION))
LDFLAGS_K8S135 := $(call ldflags_for,$(KUBE_VERSION_K8S135),$(VERSION)-$(FLAVOUR_K8S135))

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: build-main build-k8s1.35 build-placement build-cli ## Build both flavours: bin/archfilter-scheduler (main line) and bin/archfilter-scheduler-k8s1.35, bin/archfilter-placement and bin/kubectl-archfilter.

.PHONY: build-main
build-main: ## Build bin/archfilter-scheduler: the main line, Kubernetes $(KUBE_VERSION) (static, version-stamped).
	CGO_ENABLED=0 $(GO) build $(TRIMPATH) -ldflags "$(LDFLAGS)" -o $(BINARY) ./cmd/scheduler

.PHONY: build-placement
build-placement: ## Build bin/archfilter-placement: the placement mode's companion (main line; docs/placement.md).
	CGO_ENABLED=0 $(GO) build $(TRIMPATH) -ldflags "$(LDFLAGS)" -o $(BINARY_PLACEMENT) ./cmd/archfilter-placement

.PHONY: build-cli
build-cli: ## Build bin/kubectl-archfilter: the kubectl plugin (docs/kubectl-plugin.md), and bin/kubectl_complete-archfilter, through which kubectl 1.26+ completes its arguments.
	CGO_ENABLED=0 $(GO) build $(TRIMPATH) -ldflags "$(LDFLAGS)" -o $(BIN_DIR)/kubectl-archfilter ./cmd/kubectl-archfilter
	install -m 0755 cmd/kubectl-archfilter/kubectl_complete-archfilter $(BIN_DIR)/kubectl_complete-archfilter

.PHONY: build-k8s1.35
build-k8s1.35: ## Build bin/archfilter-scheduler-k8s1.35: Kubernetes $(KUBE_VERSION_K8S135) with every sigs.k8s.io/scheduler-plugins plugin.
	CGO_ENABLED=0 $(GO) build $(K8S135_GOFLAGS) $(TRIMPATH) -ldflags "$(LDFLAGS_K8S135)" -o $(BINARY_K8S135) ./cmd/scheduler-plugins

.PHONY: ldflags
ldflags: ## Print the -ldflags used by build (for the Dockerfile and scripts).
	@echo '$(LDFLAGS)'

# One version scheme: make image and make release push every image under
# $(VERSION) (git describe by default; make release takes only vX.Y.Z), the
# flavour in the tag: $(VERSION) is the main line, $(VERSION)-k8s1.35 the
# Kubernetes 1.35 build with scheduler-plugins. The placement mode's companion
# is its own image, $(PLACEMENT_IMAGE):$(VERSION), named from $(IMAGE) as the
# chart names it from image.repository. Both print the chart's values that
# pull exactly what they pushed (image.repository, image.tag): the chart in
# the tree runs its appVersion, the next release, unless told.
IMAGE_PLATFORMS ?= $(PLATFORMS)
IMAGE_FLAVOURS  ?= main k8s1.35 placement
PLACEMENT_IMAGE ?= $(patsubst %-scheduler,%,$(IMAGE))-placement
.PHONY: image
image: ## Build the multi-arch image of each flavour without a container engine and push it, with each binary's SBOM attached (OCI referrer), to $(IMAGE):$(VERSION)[-k8s1.35], and the placement companion's to $(PLACEMENT_IMAGE):$(VERSION) (IMAGE=registry/name, REGISTRY_CA=PEM for a private CA); prints the helm --set flags and make deploy line that run them (values in .cache/image/helm-values.yaml).
	IMAGE=$(IMAGE) PLACEMENT_IMAGE=$(PLACEMENT_IMAGE) VERSION=$(VERSION) GIT_COMMIT=$(GIT_COMMIT) BUILD_DATE=$(BUILD_DATE) \
		IMAGE_PLATFORMS=$(IMAGE_PLATFORMS) IMAGE_FLAVOURS="$(IMAGE_FLAVOURS)" hack/image/image.sh

.PHONY: docker-image
docker-image: ## Build the main-line image for this machine's platform with Docker (FLAVOUR=k8s1.35 for the other).
	docker build --build-arg BUILD_DATE=$(BUILD_DATE) --build-arg VERSION=$(VERSION) --build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg FLAVOUR=$(FLAVOUR) \
		-t $(IMAGE):$(VERSION)$(if $(filter k8s1.35,$(FLAVOUR)),-k8s1.35) .

.PHONY: docker-buildx
docker-buildx: ## Build and push multi-arch images of both flavours for $(PLATFORMS) (needs Docker buildx).
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg BUILD_DATE=$(BUILD_DATE) \
		--build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg FLAVOUR=main -t $(IMAGE):$(VERSION) --push .
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg BUILD_DATE=$(BUILD_DATE) \
		--build-arg GIT_COMMIT=$(GIT_COMMIT) --build-arg FLAVOUR=k8s1.35 -t $(IMAGE):$(VERSION)-k8s1.35 --push .

##@ Deploy and release
# One image name in every manifest (archfilter/archfilter-scheduler:<release>),
# replaced by kustomize's images: with $(IMAGE) and $(VERSION); never latest.

OVERLAY        ?= secondary
DIST           ?= dist

.PHONY: deploy
deploy: ## kubectl apply -k manifests/overlays/$(OVERLAY) with the image $(IMAGE):$(VERSION) (-k8s1.35 for that overlay; $(PLACEMENT_IMAGE):$(VERSION) for placement, and beside the scheduler's for heal); OVERLAY=secondary|secondary-k8s1.35|kubeadm-replacement|placement|heal.
	IMAGE=$(IMAGE) PLACEMENT_IMAGE=$(PLACEMENT_IMAGE) VERSION=$(VERSION) OVERLAY=$(OVERLAY) hack/deploy/deploy.sh apply

.PHONY: undeploy
undeploy: ## Delete what make deploy applied (and the lease); refuses while pods still name the scheduler (FORCE=1 overrides; docs/install.md); for placement, first removes its webhook and every gate it added.
	IMAGE=$(IMAGE) PLACEMENT_IMAGE=$(PLACEMENT_IMAGE) PLACEMENT_BIN=$(abspath $(BINARY_PLACEMENT)) VERSION=$(VERSION) OVERLAY=$(OVERLAY) hack/deploy/deploy.sh delete

.PHONY: release
release: ## VERSION=vX.Y.Z IMAGE=registry/name: the images (make image: both flavours and the placement companion, with their SBOMs), manifests pinned by digest, the Helm chart (its defaults: these images), helm-values.yaml (the same for charts/archfilter), kubectl-archfilter archives, every binary's SBOM, SHA256SUMS into $(DIST)/; prints the install commands.
	IMAGE=$(IMAGE) PLACEMENT_IMAGE=$(PLACEMENT_IMAGE) VERSION=$(VERSION) GIT_COMMIT=$(GIT_COMMIT) BUILD_DATE=$(BUILD_DATE) DIST=$(abspath $(DIST)) hack/release/release.sh

##@ Test

# What make test runs, in this order: each is a stage of the table it prints
# at the end (hack/stage.sh: wall time, CPU, result, tools cached or built).
TEST_STAGES    := test-unit-main test-unit-k8s1.35 verify test-race test-fuzz test-integration test-chart \
	e2e e2e-faults e2e-node e2e-karpenter test-readme bench-smoke

# Every stage runs, even after one fails; the table is printed either way and
# make test fails if a stage did. TRIMPATH is dropped so the binaries reuse
# what the tests compiled; GOTESTVET (above) leaves vet to the verify stage.
# Tools built from module graphs of their own are built in the background
# beside the first stages (tools-ahead, below).
.PHONY: test
test: ## What CI runs: unit tests, verify, the race detector, integration (in-process control plane, real binaries), the Helm chart, e2e on local KWOK clusters and on a real node, Karpenter creating nodes (mode off and on), README's commands, benchmark smoke; then a table of what each stage cost.
	@MAKE="$(MAKE)" hack/stage.sh all $(TEST_STAGES) -- TRIMPATH= GOTESTVET=-vet=off

UNIT_PKGS      := ./apis/... ./cmd/... ./internal/... ./pkg/... ./hack/image/... ./hack/sbom/... ./hack/fuzz/...
# The benchmark report's parsing, targets and smoke gates; not test/perf itself,
# whose benchmarks are make bench's and bench-smoke's.
UNIT_PKGS      += ./test/perf/benchreport/... ./test/perf/report/...
# The scheduling-cycle benchmark's placements (one cycle per case, about a second);
# its benchmark is make bench's.
UNIT_PKGS      += ./test/perf/cycle/
# README.md's shell blocks each say whether test-readme runs them.
UNIT_PKGS      += ./test/readme/...
# Every relative link and #anchor between README.md, docs/ and the chart's README resolves.
UNIT_PKGS      += ./test/doclinks/
# One Go toolchain in every path that runs go (Makefile, .ci/run, hack/, README).
UNIT_PKGS      += ./test/toolchain/

.PHONY: test-unit test-unit-main test-unit-k8s1.35
test-unit: test-unit-main test-unit-k8s1.35 ## Unit tests of both flavours (no network, no control plane).

test-unit-main: ## Unit tests of the main line.
	# test/perf's own tests (its scheduler_perf configuration) on the main line,
	# whose scheduler_perf make bench runs.
	$(GO) test $(GOTESTVET) $(GOTESTFLAGS) $(UNIT_PKGS) ./test/perf/

test-unit-k8s1.35: ## Unit tests of the k8s1.35 flavour.
	# ./cmd/... does not match cmd/scheduler-plugins (go.mod ignores it): name it.
	$(GO) test $(K8S135_GOFLAGS) $(GOTESTVET) $(GOTESTFLAGS) $(UNIT_PKGS) ./cmd/scheduler-plugins

# The packages with concurrency of their own: the resolver (workers, cache,
# singleflight), its transport (breakers, limits) and the plugin (held pods,
# timers, informers) and the placement mode (webhook, certificate renewal,
# controller workers). Tests in *race_test.go files run only here.
RACE_PKGS      := ./pkg/resolver/... ./pkg/plugins/... ./internal/placement/...

.PHONY: test-race
test-race: ## Race detector on the packages with concurrency (main line).
	# Keeps go test's vet under make test too: go vet in make verify does not
	# see the files only -race builds (//go:build race).
	CGO_ENABLED=1 $(GO) test -race $(GOTESTFLAGS) $(RACE_PKGS)

# Every fuzz target for a few seconds (FUZZTIME, 5s): the unit stage replays their seeds,
# this mutates them. make fuzz runs them for minutes (docs/reliability.md#bad-input).
.PHONY: test-fuzz
test-fuzz: ## Every Go fuzz target briefly (FUZZTIME=5s each; hack/fuzz/fuzz.sh --smoke).
	hack/fuzz/fuzz.sh --smoke

.PHONY: fuzz
fuzz: ## Every Go fuzz target for FUZZTIME (5m) each, FUZZ_TARGETS=regexp to choose; writes docs/reliability.md's bad-input table.
	hack/fuzz/fuzz.sh --doc

.PHONY: fuzz-report
fuzz-report: ## docs/reliability.md's bad-input table from earlier make fuzz runs (FUZZ_RUNS="dir1 dir2": each target's row from the last run that has it).
	hack/fuzz/fuzz.sh --report=$(shell printf '%s/results.tsv,' $(FUZZ_RUNS) | sed 's/,$$//')

.PHONY: test-integration
test-integration: build ## Integration tests of both flavours: the real binaries, control planes and registries.
	ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY)) ARCHFILTER_KUBE_VERSION=$(KUBE_VERSION) \
		$(GO) test $(GOTESTVET) $(GOTESTFLAGS) ./test/integration/...
	ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY_K8S135)) ARCHFILTER_KUBE_VERSION=$(KUBE_VERSION_K8S135) \
		$(GO) test $(K8S135_GOFLAGS) $(GOTESTVET) $(GOTESTFLAGS) ./test/integration/...

# The chart's tests are a Go module of their own (Helm's client libraries are
# Kubernetes v0.37, go.mod pins v0.36): lint, every mode and values
# combination rendered and its configuration validated as kube-scheduler and
# ArchFilter do, the values schema, promtool on the alerts, and Helm's
# install/upgrade/uninstall on a KWOK cluster of its own (hack/cluster; its
# scheduler, the plain default profile, places the chart's pods on fake nodes).
CHART_TEST_DIR := charts/archfilter/test
CHART_CLUSTER  := archfilter-chart

.PHONY: test-chart
test-chart: build-main build-placement ## The Helm chart (charts/archfilter/test): lint, render, schema, alert rules (promtool), install/upgrade/uninstall on a local KWOK cluster, the placement mode's included (the scheduler's and the placement mode's uninstall hooks' commands run as their ServiceAccounts).
	hack/install-test-deps.sh
	hack/cluster/tools.sh kubectl kustomize
	@set +o errexit; \
	kubeconfig=$$(CLUSTER_NAME=$(CHART_CLUSTER) ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY)) hack/cluster/up.sh) || exit 1; \
	(cd $(CHART_TEST_DIR) && ARCHFILTER_CHART_KUBECONFIG=$$kubeconfig $(GO) test $(GOTESTFLAGS) -count=1 ./...); rc=$$?; \
	CLUSTER_NAME=$(CHART_CLUSTER) hack/cluster/down.sh; exit $$rc

.PHONY: manifests-check
manifests-check: ## Check manifests/ (base, overlays) and render each overlay with kustomize (built once into the tools cache).
	E2E_MANIFESTS=1 $(GO) test $(GOTESTFLAGS) -count=1 -run 'TestManifests' ./cmd/scheduler/ ./test/e2e/

##@ Code

.PHONY: generate
generate: ## Regenerate deepcopy, defaults and conversion code, and the CRDs (manifests/crd, the chart's crds/).
	hack/update-codegen.sh

.PHONY: verify
verify: ## gofmt, go vet, go mod tidy, codegen and the module graphs' SBOMs must leave no diff; govulncheck (offline, both flavours) finds nothing hack/vuln/allowlist.yaml does not explain.
	hack/verify.sh

.PHONY: sbom
sbom: ## Regenerate hack/sbom/modules-{main,k8s1.35}.cdx.json, the CycloneDX SBOMs of both module graphs (after a change of go.mod or go.k8s1.35.mod).
	hack/sbom/sbom.sh modules

.PHONY: vulncheck
vulncheck: ## govulncheck on both flavours against the pinned Go vulnerability database, offline, judged by hack/vuln/allowlist.yaml (part of make verify).
	hack/vuln/check.sh

.PHONY: vulndb-update
vulndb-update: ## Pin the newest Go vulnerability database the module proxy serves (hack/vuln/vulndb.version) and run make vulncheck against it.
	hack/vuln/update-db.sh

.PHONY: clean
clean: ## Remove build output.
	rm -rf $(BIN_DIR)

.PHONY: clean-tools
clean-tools: ## Remove every tool built into the per-user tools cache (ARCHFILTER_TOOLS_CACHE, default ~/.cache/archfilter; docs/development.md).
	hack/cluster/tools.sh --clean

##@ Local clusters: demo and e2e (hack/cluster, hack/demo, test/e2e)
# Everything is built from the Go module proxy, once per user: etcd,
# kube-apiserver, kube-controller-manager, kwok, kwokctl (and kubelet, kubectl,
# kustomize, Karpenter's provider) live in the tools cache,
# ${ARCHFILTER_TOOLS_CACHE:-~/.cache/archfilter}; clusters and registries
# under .cache/ in the clone.

E2E_TIMEOUT    ?= 30m

.PHONY: tools
tools: ## Build bin/archfilter-scheduler and (once, into the tools cache) etcd, kube-apiserver, kube-controller-manager, kwok, kwokctl.
	hack/cluster/tools.sh

# The kubectl (the main line's Kubernetes version) and helm (the chart tests'
# Helm) that make demo, make test and e2e use, for your own shell:
#   eval "$(make -s tool-paths)"; export PATH="${KUBECTL_BIN%/*}:${HELM_BIN%/*}:$PATH"
TOOL_PATHS     ?= kubectl helm
.PHONY: tool-paths
tool-paths: ## Build kubectl and helm into the tools cache (once; ~/.cache/archfilter) and print KUBECTL_BIN=path and HELM_BIN=path (for eval in your shell; TOOL_PATHS= names other tools of hack/cluster/tools.sh).
	@hack/cluster/tools.sh $(TOOL_PATHS) >&2
	@hack/cluster/tools.sh --print $(TOOL_PATHS)

# demo.sh builds bin/archfilter-scheduler (make build-main) as the first of
# its numbered build steps.
.PHONY: demo
demo: ## Local KWOK cluster + registries; archfilter as secondary, then as default scheduler; ends with kubectl archfilter why on the pod no node fits.
	hack/demo/demo.sh

.PHONY: demo-down
demo-down: ## Remove the demo's cluster, registries and state (binaries stay cached).
	hack/demo/down.sh

# The support matrix, FLAVOUR:KUBE-APISERVER:KUBE-CONTROLLER-MANAGER: each
# flavour against its own minor and the next one (kube-scheduler may be one
# minor older than the API server). The newer minors' controller manager is
# the flavour's own, which the skew policy allows (one minor older than the
# API server) and which saves building one per minor. The main line's next
# minor, 1.38, has no cell: its beta's kube-apiserver cannot be built from the
# module proxy (k8s.io/apiextensions-api, a staging module new in 1.38 that
# apiextensions-apiserver requires, is refused at every version).
E2E_MATRIX     ?= main:$(KUBE_VERSION):$(KUBE_VERSION) \
	k8s1.35:$(KUBE_VERSION_K8S135):$(KUBE_VERSION_K8S135) k8s1.35:v1.36.5:$(KUBE_VERSION_K8S135)

.PHONY: e2e
e2e: build ## End-to-end tests on local KWOK clusters, once per cell of E2E_MATRIX (each brought up and removed).
	E2E_TIMEOUT=$(E2E_TIMEOUT) GOTESTFLAGS="$(GOTESTFLAGS)" hack/cluster/e2e-matrix.sh $(E2E_MATRIX)

.PHONY: e2e-faults
e2e-faults: build-main build-placement ## Faults injected mid-burst on a local KWOK cluster (test/faults): scheduler failover (SIGKILL, SIGTERM), kube-apiserver and etcd restarts, a registry outage, the hot standby, the placement mode's faults; table in .cache/faults/table.md, and with FAULTS_UPDATE_DOC=1 in docs/reliability.md.
	E2E_PROVIDER=kwok ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY)) PLACEMENT_BIN=$(abspath $(BINARY_PLACEMENT)) \
		$(GO) test $(GOTESTVET) $(GOTESTFLAGS) -count=1 -timeout 45m -v ./test/faults/

# The tools make test needs that are built from module graphs of their own, so
# that the tests compile none of their packages: etcd, kwok, kustomize,
# govulncheck, cyclonedx-gomod and the Go vulnerability database, the
# matrix's API servers of versions without a module file here, helm (from the
# chart tests' module), Karpenter's provider; and the linux/arm64 compile of
# make e2e-node's images. make test (hack/stage.sh) builds
# them in the background beside its first stages, which leave a core idle
# part of the time; a stage that needs one still being built waits for it.
# The tools of this module's graph (the flavours' control planes, kubelet,
# kubectl) are left to the stages: the tests compile their packages first.
.PHONY: tools-ahead
tools-ahead: ## Build into the tools cache what make test needs from module graphs of their own (make test does it in the background).
	hack/cluster/tools.sh etcd kwok kustomize
	# make verify's govulncheck and database, and the SBOM generator (make image in e2e-node).
	hack/cluster/tools.sh govulncheck vulndb cyclonedx-gomod
	for v in $(sort $(foreach c,$(E2E_MATRIX),$(word 2,$(subst :, ,$(c))))); do \
		case $$v in $(KUBE_VERSION)|$(KUBE_VERSION_K8S135)) continue ;; esac; \
		KUBE_VERSION=$$v hack/cluster/tools.sh kube-apiserver; \
	done
	hack/cluster/tools.sh helm
	hack/karpenter/tools.sh
	# Not a tool: the linux/arm64 compile of the scheduler and the companion
	# that make e2e-node's images need (the tests compile nothing for arm64),
	# into Go's build cache, with the flags make image uses.
	GOOS=linux GOARCH=arm64 nice -n 10 $(GO) build $(TRIMPATH) ./cmd/scheduler ./cmd/archfilter-placement

.PHONY: e2e-node
e2e-node: build-main ## A real linux/amd64 node (kubelet, Debian's containerd and runc; root) beside KWOK nodes: archfilter deployed with kubectl apply -k, the real exec format error and the fix; then the Helm chart with the placement mode from its own image (install, the stock scheduler placing by the affinity it wrote, upgrade, uninstall through its hook) and the k8s1.35 image run once.
	# TRIMPATH is passed on to make image: under make test its amd64 binary then
	# reuses what the tests compiled (the image is not reproducible then).
	TRIMPATH="$(TRIMPATH)" ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY)) hack/node/e2e-node.sh

.PHONY: e2e-karpenter
e2e-karpenter: build-main build-placement ## The placement mode with a real autoscaler: Karpenter's KWOK provider (built from the module proxy, hack/karpenter) creating nodes for an arm64-only Deployment, mode off and on, then the uninstall (test/karpenter).
	ARCHFILTER_SCHEDULER_BINARY=$(abspath $(BINARY)) PLACEMENT_BIN=$(abspath $(BIN_DIR))/archfilter-placement GOTESTFLAGS="$(GOTESTFLAGS)" hack/karpenter/e2e.sh

.PHONY: test-readme
test-readme: build-main ## Run README.md's shell blocks as written (make demo, kubectl against its cluster; test/readme), then make demo-down.
	PATH="$$(dirname "$$(hack/node/node.sh kubectl)"):$$PATH" ARCHFILTER_README_RUN=1 \
		$(GO) test $(GOTESTVET) $(GOTESTFLAGS) -count=1 -v -timeout 30m -run TestShellBlocksRun ./test/readme/

.PHONY: e2e-kind
e2e-kind: ## End-to-end tests on a kind cluster (needs Docker, kind, kubectl; cannot run without a Docker engine).
	E2E_PROVIDER=kind $(GO) test $(GOTESTFLAGS) -count=1 -timeout $(E2E_TIMEOUT) -v ./test/e2e/...

##@ Benchmarks: scheduler_perf throughput and micro-benchmarks (test/perf, hack/bench)
# Results, machine and raw benchstat output go to docs/benchmarks.md; raw outputs to
# .cache/bench/. BENCH_SCALE=small (500 nodes, 2 000 pods) or full (5 000, 10 000).

BENCH_SCALE    ?= small
# Run directories for bench-report: BENCH_OUT of earlier runs, e.g. ".cache/bench/full-<time> .cache/bench/small-<time>".
BENCH_RUNS     ?=

.PHONY: bench
bench: ## Benchmarks (BENCH_SCALE=small|full): writes docs/benchmarks.md and prints the summary.
	BENCH_SCALE=$(BENCH_SCALE) hack/bench/bench.sh

.PHONY: bench-report
bench-report: ## docs/benchmarks.md from earlier runs, no benchmark (BENCH_RUNS="dir1 dir2": each row from one run, the largest scale's that has it).
	hack/bench/bench.sh --report $(BENCH_RUNS)

.PHONY: bench-smoke
bench-smoke: ## CI-sized benchmark smoke: fails only on gross regressions (Filter allocating, held pods attempted).
	hack/bench/bench.sh --smoke
