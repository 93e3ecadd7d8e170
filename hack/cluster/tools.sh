#!/usr/bin/env bash
# Builds, once, every binary a local KWOK cluster needs, from the Go module
# proxy only (no downloads of release binaries):
#   etcd                     from a tiny module of its own (etcd's replace lines
#                            stop `go install` of the server)
#   kube-apiserver,          KUBE_VERSION and KCM_VERSION (default: the main line's):
#   kube-controller-manager  from this module's graphs (go.mod, go.k8s1.34.mod; hack/tools.go
#                            pins them) or a tiny module of their own for other versions,
#                            version-stamped like `make build` stamps the scheduler
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

# kube_ldflags VERSION mirrors the Makefile's stamping of
# k8s.io/component-base/version, so the control plane reports VERSION and not
# v0.0.0-master.
kube_ldflags() {
  local version=$1 cv=k8s.io/component-base/version
  local v=${version#v}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  echo "-s -w -X $cv.gitVersion=$version -X $cv.gitMajor=$major -X $cv.gitMinor=$minor -X $cv.gitTreeState=clean -X $cv.buildDate=1970-01-01T00:00:00Z"
}

# served_patch MODULE MINOR PATCH prints the newest v0.MINOR.P (P <= PATCH)
# of MODULE that the module proxy and the checksum database both serve: some
# staging modules' newest patches are missing from one or the other.
served_patch() {
  local module=$1 minor=$2 p=$3
  while ((p >= 0)); do
    if (cd "$ARCHFILTER_CACHE" && GOFLAGS= go mod download "$module@v0.$minor.$p" >/dev/null 2>&1); then
      echo "v0.$minor.$p"
      return
    fi
    p=$((p - 1))
  done
  return 1
}

# kube_module VERSION prints the directory and the go flags that build
# k8s.io/kubernetes VERSION's kube-apiserver: the project's own module files
# for the two flavours' versions (their packages are mostly compiled already),
# else a tiny module of its own under .cache/src. k8s.io/kubernetes requires
# every staging module at v0.0.0, so that module replaces each with the
# matching v0.MINOR.PATCH, or the newest lower patch that is served (a patch
# skew inside the minor, as go.k8s1.34.mod has); the sample-* modules, which
# nothing built here imports, are left out. Other versions' controller
# managers are not built this way: the Makefile's matrix runs each API server
# with its flavour's, one minor older, as the skew policy allows.
kube_module() {
  local version=$1
  if [[ $version == "$MAIN_KUBE_VERSION" ]]; then
    echo "$ROOT"
    return
  fi
  if [[ $version == "$K8S134_KUBE_VERSION" ]]; then
    echo "$ROOT -modfile=go.k8s1.34.mod"
    return
  fi
  local src=$ARCHFILTER_CACHE/src/kube-$version v=${version#v}
  if [[ ! -f $src/go.sum ]]; then
    mkdir -p "$src"
    local mod godir staging
    mod=$(cd "$ARCHFILTER_CACHE" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
    [[ -f $mod ]] || die "k8s.io/kubernetes $version: the module proxy did not serve its go.mod"
    godir=$(awk '/^go /{print $2; exit}' "$mod")
    staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// && $1 !~ /sample-/ {print $1}' "$mod")
    local minor=${v#*.} patch
    patch=${minor#*.}
    minor=${minor%%.*}
    {
      printf 'module archfilter.local/kube-%s\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$v" "$godir" "$version"
      local m served
      for m in $staging; do
        served=$(served_patch "$m" "$minor" "$patch") || die "$m: no v0.$minor.x up to v0.$minor.$patch is served"
        printf '\t%s => %s %s\n' "$m" "$m" "$served"
      done
      printf ')\n'
    } >"$src/go.mod.tmp" || exit 1
    mv "$src/go.mod.tmp" "$src/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' >"$src/tools.go"
    local out
    if ! out=$(cd "$src" && GOFLAGS=-mod=mod go mod tidy 2>&1); then
      echo "$out" >&2
      rm -f "$src/go.sum"
      die "resolving k8s.io/kubernetes $version's dependencies failed (is every staging module served at v0.${v#*.}?)"
    fi
  fi
  echo "$src"
}

build_kube() { # build_kube NAME VERSION OUT
  local name=$1 version=$2 out=$3 start dir flags
  [[ -x $out ]] && return
  start=$(date +%s)
  local spec
  spec=$(kube_module "$version") || exit 1
  read -r dir flags <<<"$spec"
  local from="this module (${flags:-go.mod})"
  [[ $dir == "$ROOT" ]] || from=${dir#"$ROOT"/}
  log "building $name $version from $from (once; a few minutes, ~2 GB RAM)"
  mkdir -p "$(dirname "$out")"
  # shellcheck disable=SC2086 # flags is empty or one flag
  # No -trimpath: built like the tests build (CGO_ENABLED=0, see the Makefile),
  # the versions of this module graph reuse what the integration tests compiled.
  (cd "$dir" && CGO_ENABLED=0 $NICE go build $flags -ldflags "$(kube_ldflags "$version")" \
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
  build_kube kube-apiserver "$KUBE_VERSION" "$APISERVER_BIN"
  build_kube kube-controller-manager "$KCM_VERSION" "$KCM_BIN"
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
