#!/usr/bin/env bash
# Deletes the local KWOK cluster (processes and state) and, with --all, the
# local registries too. Built tools stay in the tools cache (make clean-tools
# drops them). Safe to run when nothing is up.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
eval "$("$ROOT/hack/cluster/tools.sh" --print kwok)"

if [[ -x $KWOKCTL_BIN ]] && "$KWOKCTL_BIN" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  log "deleting KWOK cluster $CLUSTER_NAME"
  "$KWOKCTL_BIN" --name "$CLUSTER_NAME" delete cluster --kubeconfig "$ARCHFILTER_CACHE/$CLUSTER_NAME.kubeconfig" >/dev/null 2>&1 || true
fi
rm -rf "$KWOK_WORKDIR/clusters/$CLUSTER_NAME" "$KWOK_WORKDIR/$CLUSTER_NAME".* "$ARCHFILTER_CACHE/$CLUSTER_NAME.kubeconfig"
if [[ ${1:-} == --all ]]; then
  "$ROOT/hack/cluster/registry.sh" down
fi
