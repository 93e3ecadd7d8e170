#!/usr/bin/env bash
# Builds, once, every binary a local KWOK cluster needs, from the Go module
# proxy only (no downloads of release binaries):
#   etcd                     from a tiny module of its own (etcd's replace lines
#                            stop `go install` of the server)
#   kube-apiserver,          from this module's graph (hack/tools.go pins them),
#   kube-controller-manager  version-stamped like `make build` stamps the scheduler
#   kwok, kwokctl            `go install …@version`
# and bin/archfilter-scheduler (`make build`, which is incremental).
#
# Binaries are cached under .cache/bin/<name>-<version>/: a second run only
# checks they exist. Usage: hack/cluster/tools.sh [--print]   (--print: paths only)
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_cmd go "install Go 1.25+ (https://go.dev/doc/install)"

build_etcd() {
  [[ -x $ETCD_BIN ]] && return
  local start src
  start=$(date +%s)
  src=$ARCHFILTER_CACHE/src/etcd-$ETCD_VERSION
  log "building etcd $ETCD_VERSION (once; ~30s warm, a few minutes cold)"
  mkdir -p "$src" "$(dirname "$ETCD_BIN")"
  cat >"$src/go.mod" <<MOD
module archfilter.local/etcd

go 1.25

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat >"$src/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  local out
  if ! out=$(cd "$src" && GOFLAGS=-mod=mod go mod tidy 2>&1); then
    echo "$out" >&2
    die "resolving etcd $ETCD_VERSION's dependencies failed (Go module proxy reachable?)"
  fi
  (cd "$src" && GOFLAGS=-mod=mod CGO_ENABLED=0 $NICE go build -trimpath -ldflags '-s -w' \
    -o "$ETCD_BIN.tmp" go.etcd.io/etcd/server/v3)
  mv "$ETCD_BIN.tmp" "$ETCD_BIN"
  info "etcd built in $(since "$start")"
}

# kube_ldflags mirrors the Makefile's stamping of k8s.io/component-base/version,
# so the control plane reports v1.34.x and not v0.0.0-master.
kube_ldflags() {
  local v=${KUBE_VERSION#v} cv=k8s.io/component-base/version
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  echo "-s -w -X $cv.gitVersion=$KUBE_VERSION -X $cv.gitMajor=$major -X $cv.gitMinor=$minor -X $cv.gitTreeState=clean -X $cv.buildDate=1970-01-01T00:00:00Z"
}

build_kube() { # build_kube NAME OUT
  local name=$1 out=$2 start
  [[ -x $out ]] && return
  start=$(date +%s)
  log "building $name $KUBE_VERSION from the module graph (once; a few minutes, ~2 GB RAM)"
  mkdir -p "$(dirname "$out")"
  (cd "$ROOT" && CGO_ENABLED=0 $NICE go build -trimpath -ldflags "$(kube_ldflags)" \
    -o "$out.tmp" "k8s.io/kubernetes/cmd/$name")
  mv "$out.tmp" "$out"
  info "$name built in $(since "$start")"
}

build_kwok() {
  [[ -x $KWOK_BIN && -x $KWOKCTL_BIN ]] && return
  local start dir
  start=$(date +%s)
  dir=$(dirname "$KWOK_BIN")
  log "building kwok and kwokctl $KWOK_VERSION (once; ~2 minutes)"
  mkdir -p "$dir"
  # Outside the project module so its go.mod is neither read nor touched.
  (cd "$ARCHFILTER_CACHE" && GOBIN="$dir.tmp" GOFLAGS="" CGO_ENABLED=0 $NICE go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION")
  mv "$dir.tmp/kwok" "$dir.tmp/kwokctl" "$dir/" && rmdir "$dir.tmp"
  info "kwok and kwokctl built in $(since "$start")"
}

build_scheduler() {
  if [[ -n ${ARCHFILTER_SCHEDULER_BINARY:-} ]]; then
    [[ -x $SCHEDULER_BIN ]] || die "ARCHFILTER_SCHEDULER_BINARY=$SCHEDULER_BIN is not an executable"
    return
  fi
  local start
  start=$(date +%s)
  log "building bin/archfilter-scheduler (make build; incremental)"
  (cd "$ROOT" && $NICE make --no-print-directory build >/dev/null)
  info "scheduler ready in $(since "$start")"
}

main() {
  local start
  start=$(date +%s)
  mkdir -p "$TOOLS_DIR"
  # Sequential on purpose: each link needs ~2 GB and both cores.
  build_etcd
  build_kube kube-apiserver "$APISERVER_BIN"
  build_kube kube-controller-manager "$KCM_BIN"
  build_kwok
  build_scheduler
  log "tools ready in $(since "$start") (cache: $TOOLS_DIR)"
}

if [[ ${1:-} == --print ]]; then
  printf '%s\n' "ETCD_BIN=$ETCD_BIN" "APISERVER_BIN=$APISERVER_BIN" "KCM_BIN=$KCM_BIN" \
    "KWOK_BIN=$KWOK_BIN" "KWOKCTL_BIN=$KWOKCTL_BIN" "SCHEDULER_BIN=$SCHEDULER_BIN"
else
  main
fi
