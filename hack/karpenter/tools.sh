#!/usr/bin/env bash
# Builds, once, Karpenter's KWOK cloud provider (sigs.k8s.io/karpenter/kwok, a
# main) unmodified from the Go module proxy, for test/karpenter. The version
# is the one hack/karpenter/go.mod requires; that module is Karpenter's own so
# its dependency versions never touch the project's go.mod / go.k8s1.34.mod.
# Karpenter needs a newer Go than the project: the toolchain named by the
# module's `go` line is downloaded from the module proxy (GOTOOLCHAIN).
#
# Cached under .cache/bin/karpenter-kwok-<version>/ like hack/cluster/tools.sh's
# binaries: a second run only checks it exists.
# Usage: hack/karpenter/tools.sh [--print]
#   --print  KARPENTER_BIN=… and KARPENTER_CRDS=… (the CRD files: NodePool,
#            NodeClaim, NodeOverlay, CapacityBuffer, KWOKNodeClass, from the
#            module's directory in the module cache), nothing built
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

MOD_DIR=$ROOT/hack/karpenter
KARPENTER_VERSION=$(awk '$1 == "sigs.k8s.io/karpenter" {print $2; exit}' "$MOD_DIR/go.mod")
[[ -n $KARPENTER_VERSION ]] || KARPENTER_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/karpenter" {print $3; exit}' "$MOD_DIR/go.mod")
KARPENTER_GO=go$(awk '$1 == "go" {print $2; exit}' "$MOD_DIR/go.mod")
KARPENTER_BIN=$TOOLS_DIR/karpenter-kwok-$KARPENTER_VERSION/karpenter-kwok

karpenter_go() { (cd "$MOD_DIR" && GOTOOLCHAIN=$KARPENTER_GO GOFLAGS=-mod=readonly go "$@"); }

crds() {
  local dir
  dir=$(karpenter_go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter) || die "sigs.k8s.io/karpenter $KARPENTER_VERSION: not in the module cache and not served"
  [[ -d $dir ]] || karpenter_go mod download sigs.k8s.io/karpenter
  ls "$dir"/kwok/charts/crds/*.yaml "$dir"/kwok/apis/crds/*.yaml | paste -sd, -
}

build() {
  [[ -x $KARPENTER_BIN ]] && return
  local start
  start=$(date +%s)
  log "building Karpenter's KWOK provider $KARPENTER_VERSION with $KARPENTER_GO (once; a few minutes cold)"
  mkdir -p "$(dirname "$KARPENTER_BIN")"
  # shellcheck disable=SC2086
  (cd "$MOD_DIR" && GOTOOLCHAIN=$KARPENTER_GO GOFLAGS=-mod=readonly CGO_ENABLED=0 $NICE go build -trimpath \
    -ldflags '-s -w' -o "$KARPENTER_BIN.tmp" sigs.k8s.io/karpenter/kwok)
  mv "$KARPENTER_BIN.tmp" "$KARPENTER_BIN"
  info "Karpenter's KWOK provider built in $(since "$start")"
}

if [[ ${1:-} == --print ]]; then
  printf '%s\n' "KARPENTER_BIN=$KARPENTER_BIN" "KARPENTER_CRDS=$(crds)"
else
  build
fi
