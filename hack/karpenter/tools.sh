#!/usr/bin/env bash
# Builds, once, Karpenter's KWOK cloud provider (sigs.k8s.io/karpenter/kwok, a
# main) unmodified from the Go module proxy, for test/karpenter. The version
# is the one hack/karpenter/go.mod requires; that module is Karpenter's own so
# its dependency versions never touch the project's go.mod / go.k8s1.35.mod.
# Karpenter's module asks for Go 1.26.9 or newer (its go.mod's `go` line); it
# is built with the project's toolchain (hack/lib/go.sh, go1.27.3), which the
# go command fetches from the module proxy, never with a machine's own Go.
#
# Cached in the per-user tools cache (hack/lib/tools-cache.sh) with the
# module's CRD files beside it, keyed by hack/karpenter/go.mod and go.sum, the
# toolchain and the build flags: once it is there, neither the toolchain nor
# the module is needed again.
# Usage: hack/karpenter/tools.sh [--print]
#   --print  KARPENTER_BIN=… and KARPENTER_CRDS=… (the CRD files: NodePool,
#            NodeClaim, NodeOverlay, CapacityBuffer, KWOKNodeClass), nothing built
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

MOD_DIR=$ROOT/hack/karpenter
KARPENTER_VERSION=$(awk '$1 == "sigs.k8s.io/karpenter" {print $2; exit}' "$MOD_DIR/go.mod")
[[ -n $KARPENTER_VERSION ]] || KARPENTER_VERSION=$(awk '$1 == "require" && $2 == "sigs.k8s.io/karpenter" {print $3; exit}' "$MOD_DIR/go.mod")
KARPENTER_GO=$GOTOOLCHAIN

karpenter_go() { (cd "$MOD_DIR" && GOTOOLCHAIN=$KARPENTER_GO GOFLAGS=-mod=readonly go "$@"); }

# build OUT: the provider, and the CRDs from the module's directory in the module cache.
build() {
  local out=$1 dir
  # shellcheck disable=SC2086
  (cd "$MOD_DIR" && GOTOOLCHAIN=$KARPENTER_GO GOFLAGS=-mod=readonly CGO_ENABLED=0 $NICE go build -trimpath \
    -ldflags '-s -w' -o "$out/karpenter-kwok" sigs.k8s.io/karpenter/kwok)
  dir=$(karpenter_go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
  [[ -d $dir ]] || die "sigs.k8s.io/karpenter $KARPENTER_VERSION: not in the module cache"
  mkdir -p "$out/crds"
  cp "$dir"/kwok/charts/crds/*.yaml "$dir"/kwok/apis/crds/*.yaml "$out/crds/"
}
# verify OUT: Go's build information says which Karpenter and which toolchain;
# --help runs the binary without a cluster.
verify() {
  local out=$1
  expect_version "$out/karpenter-kwok" "	sigs.k8s.io/karpenter	$KARPENTER_VERSION" go version -m "$out/karpenter-kwok" &&
    expect_version "$out/karpenter-kwok" "$KARPENTER_GO" go version "$out/karpenter-kwok" &&
    expect_help "$out/karpenter-kwok" "Usage" --help &&
    compgen -G "$out/crds/*.yaml" >/dev/null
}

KEY=$(tool_key karpenter-kwok "$KARPENTER_VERSION" "toolchain=$KARPENTER_GO" "$(go_key)" \
  "$(files_key "$MOD_DIR/go.mod" "$MOD_DIR/go.sum")" "$(declare -f build)")
DIR=$(tool_dir "$KEY")

if [[ ${1:-} == --print ]]; then
  printf '%s\n' "KARPENTER_BIN=$DIR/karpenter-kwok" "KARPENTER_CRDS=$(find "$DIR/crds" -name '*.yaml' 2>/dev/null | sort | paste -sd, -)"
else
  cached_build "$KEY" "Karpenter's KWOK provider $KARPENTER_VERSION with $KARPENTER_GO" verify build
fi
