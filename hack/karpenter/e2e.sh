#!/usr/bin/env bash
# The placement mode's proof with a real autoscaler (test/karpenter):
# Karpenter's KWOK provider against a local KWOK cluster (hack/cluster/up.sh)
# that starts with no nodes and runs the upstream default scheduler profile
# (bin/archfilter-scheduler without a config is plain kube-scheduler), with
# the e2e registries on their own loopback ports. Builds what is missing
# (hack/cluster/tools.sh, hack/karpenter/tools.sh, the placement companion),
# runs the test, and removes the cluster and registries (E2E_KEEP_CLUSTER=1
# keeps them).
#
# Environment: GOTESTFLAGS, GOTESTVET (make test: -vet=off), E2E_TIMEOUT (default 10m), E2E_KEEP_CLUSTER,
# PLACEMENT_BIN (default bin/archfilter-placement, built here),
# ARCHFILTER_SCHEDULER_BINARY (hack/cluster/lib.sh).
set -euo pipefail
export CLUSTER_NAME=${CLUSTER_NAME:-archfilter-karpenter}
export REGISTRY_SET=${REGISTRY_SET:-karpenter}
export REGISTRY_PORT=${REGISTRY_PORT:-5031}
export PRIVATE_REGISTRY_PORT=${PRIVATE_REGISTRY_PORT:-5032}
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

start=$(date +%s)
"$ROOT/hack/karpenter/tools.sh"
eval "$("$ROOT/hack/karpenter/tools.sh" --print)"
# The placement companion: make e2e-karpenter passes bin/archfilter-placement
# (make build-placement); run alone, the script builds it the same way.
placement_bin=${PLACEMENT_BIN:-}
if [[ -z $placement_bin ]]; then
  placement_bin=$ROOT/bin/archfilter-placement
  log "building $placement_bin (make build-placement; incremental)"
  (cd "$ROOT" && $NICE make --no-print-directory build-placement >/dev/null)
fi
[[ -x $placement_bin ]] || die "PLACEMENT_BIN=$placement_bin is not an executable"

cleanup() {
  # Processes the test started and could not stop (it was killed): their
  # pids are in the log directory (test/karpenter's track).
  local pidfile
  for pidfile in "$ARCHFILTER_CACHE"/karpenter-e2e/*.pid; do
    [[ -f $pidfile ]] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  if [[ -n ${E2E_KEEP_CLUSTER:-} ]]; then
    log "E2E_KEEP_CLUSTER is set: leaving $CLUSTER_NAME and its registries up (CLUSTER_NAME=$CLUSTER_NAME REGISTRY_SET=$REGISTRY_SET hack/cluster/down.sh --all)"
    return
  fi
  "$ROOT/hack/cluster/down.sh" --all
}
trap cleanup EXIT

"$ROOT/hack/cluster/registry.sh" up
registry=$("$ROOT/hack/cluster/registry.sh" env | sed -n 's/^REGISTRY=//p')
kubeconfig=$(FAKE_NODES=0 "$ROOT/hack/cluster/up.sh")
info "cluster and registries ready in $(since "$start")"

log "go test ./test/karpenter/"
cd "$ROOT"
# shellcheck disable=SC2086 # GOTESTFLAGS is a list of flags
E2E_KUBECONFIG=$kubeconfig KARPENTER_BIN=$KARPENTER_BIN KARPENTER_CRDS=$KARPENTER_CRDS \
  REGISTRY=$registry PLACEMENT_BIN=$placement_bin \
  go test ${GOTESTVET:-} ${GOTESTFLAGS:-} -count=1 -v -timeout "${E2E_TIMEOUT:-10m}" ./test/karpenter/
log "e2e-karpenter done in $(since "$start")"
