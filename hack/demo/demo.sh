#!/usr/bin/env bash
# `make demo`: archfilter-scheduler on a local KWOK cluster, first as a
# secondary scheduler beside plain kube-scheduler, then as the replacement
# default scheduler; each phase prints a table of pods whose ARCHFILTER column
# is read from what the cluster records. It ends by running
# `kubectl archfilter why` on the pod no node fits (bin/kubectl-archfilter,
# make build-cli) and printing how to run it yourself. Needs Go and, for the
# registries, root (to apt-get install docker-registry) or those packages
# already installed.
#
# Re-running is idempotent (the namespace is reset, images have fixed
# digests, binaries are cached); `make demo-down` removes everything.
# Environment: CLUSTER_NAME (default archfilter-demo), REGISTRY_PORT (5001),
# PRIVATE_REGISTRY_PORT (5002), ARCHFILTER_SCHEDULER_BINARY.
set -euo pipefail
export CLUSTER_NAME=${CLUSTER_NAME:-archfilter-demo}
export REGISTRY_SET=demo
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

start=$(date +%s)
DEMO_BIN=$LOCAL_BIN/archfilter-demo
STATE=$ARCHFILTER_CACHE/demo
mkdir -p "$STATE"

# The scheduler (make build-main) and the cluster's tools, numbered: the first
# run compiles for a while.
"$ROOT/hack/cluster/tools.sh"
export ARCHFILTER_SCHEDULER_BINARY=$SCHEDULER_BIN
eval "$("$ROOT/hack/cluster/tools.sh" --print kwok)"
"$ROOT/hack/cluster/registry.sh" up
eval "$("$ROOT/hack/cluster/registry.sh" env)"
reg=(--registry "$REGISTRY" --private-registry "$PRIVATE_REGISTRY" --user "$PRIVATE_REGISTRY_USER" --password "$PRIVATE_REGISTRY_PASSWORD")

log "building the demo helper (hack/demo; incremental)"
mkdir -p "$LOCAL_BIN"
(cd "$ROOT" && $NICE go build -o "$DEMO_BIN" ./hack/demo)
# kubectl archfilter: the demo ends by asking it about a pod, as a user would.
log "building bin/kubectl-archfilter (make build-cli; incremental)"
(cd "$ROOT" && $NICE make --no-print-directory build-cli >/dev/null)
PLUGIN_BIN=$ROOT/bin/kubectl-archfilter

log "seeding the registries with fixture images (fixed digests: a re-run pushes nothing new)"
"$DEMO_BIN" seed "${reg[@]}"

banner() { printf '\n\033[1m%s\033[0m\n%s\n' "$1" "$(printf '%*s' "${#1}" '' | tr ' ' '=')"; }

banner "1/2  archfilter-scheduler as a SECONDARY scheduler"
info "the cluster's own scheduler is plain kube-scheduler (archfilter-scheduler without --config"
info "runs the upstream default profile); pods opt in with schedulerName: archfilter-scheduler"
kubeconfig=$("$ROOT/hack/cluster/up.sh")
(cd "$ROOT" && "$DEMO_BIN" run --mode secondary --kubeconfig "$kubeconfig" "${reg[@]}" \
  --scheduler-binary "$SCHEDULER_BIN" --config manifests/scheduler-config/secondary-scheduler.yaml \
  --state-dir "$STATE")

banner "2/2  archfilter-scheduler as the REPLACEMENT default scheduler"
config=$STATE/default-scheduler.yaml
"$DEMO_BIN" config --template "$ROOT/manifests/scheduler-config/default-scheduler.yaml" --out "$config" \
  --insecure-registry "$REGISTRY" --insecure-registry "$PRIVATE_REGISTRY"
info "kwokctl runs $SCHEDULER_BIN --config <copy of manifests/scheduler-config/default-scheduler.yaml>"
kubeconfig=$("$ROOT/hack/cluster/up.sh" --scheduler-config "$config")
(cd "$ROOT" && "$DEMO_BIN" run --mode replacement --kubeconfig "$kubeconfig" "${reg[@]}" --state-dir "$STATE" \
  --config "$config")

# kubectl archfilter why on the pod no node fits, run for real. kubectl runs
# bin/kubectl-archfilter for `kubectl archfilter`; without a kubectl (on PATH
# or built by hack/node/node.sh kubectl) the demo runs the plugin itself.
pod=$("$DEMO_BIN" unschedulable --kubeconfig "$kubeconfig" | head -n 1)
eval "$("$ROOT/hack/cluster/tools.sh" --print kubectl)"
if command -v kubectl >/dev/null 2>&1; then
  archfilter() { PATH=$ROOT/bin:$PATH kubectl archfilter "$@"; }
  runner="kubectl ($(command -v kubectl)) runs $PLUGIN_BIN"
elif [[ -x $KUBECTL_BIN ]]; then
  archfilter() { PATH=$ROOT/bin:$PATH "$KUBECTL_BIN" archfilter "$@"; }
  runner="kubectl ($KUBECTL_BIN) runs $PLUGIN_BIN"
else
  archfilter() { "$PLUGIN_BIN" "$@"; }
  runner="no kubectl found: $PLUGIN_BIN runs by itself, as kubectl would run it"
fi
banner "kubectl archfilter: why is $pod Pending?"
printf '$ kubectl archfilter why -n archfilter-demo %s\n' "$pod"
status=0
KUBECONFIG=$kubeconfig archfilter why -n archfilter-demo "$pod" 2>&1 || status=$?
# why exits 1 for a pod that runs nowhere and 2 when it could not answer
# (docs/kubectl-plugin.md): the demo wants an answer.
if ((status >= 2)); then
  die "kubectl archfilter why -n archfilter-demo $pod could not answer (exit status $status)"
fi
info "(exit status $status; $runner)"

log "demo done in $(since "$start"). The cluster is still up; try kubectl archfilter yourself:"
info "export KUBECONFIG=$kubeconfig PATH=$ROOT/bin:\$PATH   # kubectl runs bin/kubectl-archfilter as \`kubectl archfilter\`"
info "kubectl archfilter why -n archfilter-demo $pod"
info "kubectl archfilter report -n archfilter-demo"
info 'kubectl -n archfilter-demo get pods -o wide   # no kubectl? eval "$(make -s tool-paths)" builds one, then use $KUBECTL_BIN'
info "scheduler logs: $KWOKCTL_BIN --name $CLUSTER_NAME logs kube-scheduler; $STATE/secondary/"
info "make demo-down removes the cluster and the registries"
