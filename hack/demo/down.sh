#!/usr/bin/env bash
# `make demo-down`: deletes the demo's KWOK cluster, its registries and state.
# Built tools stay in the tools cache (make clean-tools drops them).
set -euo pipefail
export CLUSTER_NAME=${CLUSTER_NAME:-archfilter-demo}
export REGISTRY_SET=demo
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"
"$ROOT/hack/cluster/down.sh" --all
rm -rf "$ARCHFILTER_CACHE/demo"
log "demo removed"
