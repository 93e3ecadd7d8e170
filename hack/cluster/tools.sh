#!/usr/bin/env bash
# Builds, once per user, the binaries the local clusters and tests need, from
# the Go module proxy only (no downloads of release binaries), into the tools
# cache (hack/lib/tools-cache.sh: $ARCHFILTER_TOOLS_CACHE, default
# ~/.cache/archfilter, shared by every clone):
#   etcd                     from a tiny module of its own (etcd's replace lines
#                            stop `go install` of the server)
#   kube-apiserver,          KUBE_VERSION and KCM_VERSION (default: the main line's):
#   kube-controller-manager  from this module's graphs (go.mod, go.k8s1.35.mod; hack/tools.go
#                            pins them) or a tiny module of their own for other versions,
#                            version-stamped like `make build` stamps the scheduler
#   kwok, kwokctl            `go install …@version`
#   kubelet, kubectl         KUBE_VERSION (a flavour's) from the flavour's module file (hack/node)
#   kustomize                the version in go.mod's graph, `go install …@version` (test/e2e, charts)
#   benchstat                `go install …@version` (make bench)
#   govulncheck              `go install golang.org/x/vuln/cmd/govulncheck@version` (make verify)
#   vulndb                   the Go vulnerability database of the golang.org/x/vulndb module
#                            version in hack/vuln/vulndb.version, as the v1 layout that
#                            `govulncheck -db file://…` reads (make verify; make vulndb-update)
#   cyclonedx-gomod          `go install …@version`: the SBOMs (hack/sbom, make release, make image)
#   helm                     the CLI of the Helm library the chart's tests use (the version in
#                            charts/archfilter/test/go.mod, built from a copy of that module file;
#                            make e2e-node installs the chart with it)
# and bin/archfilter-scheduler (`make build-main`, which is incremental) unless
# ARCHFILTER_SCHEDULER_BINARY names one.
#
# Each tool's entry is keyed by what determines the binary (name, version, Go
# version and target, flags and ldflags, the module files it is built from),
# so a changed input builds a new entry and an unchanged one is found.
#
# Usage:
#   hack/cluster/tools.sh                 the cluster's tools (etcd, kube-apiserver,
#                                         kube-controller-manager, kwok) and the scheduler
#   hack/cluster/tools.sh TOOL...         those tools (names above; kwok is kwok and kwokctl)
#   hack/cluster/tools.sh --print [TOOL...]  NAME_BIN=path lines (all tools by default),
#                                         nothing built (a version outside the flavours
#                                         resolves its tiny module first)
#   hack/cluster/tools.sh --clean         remove every built tool (make clean-tools)
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_cmd go "install Go 1.26+ (https://go.dev/doc/install)"
need_cmd flock "it is in util-linux"

# --- etcd ---------------------------------------------------------------------------------

build_etcd() {
  local out=$1 src=$1/src
  mkdir -p "$src"
  cat >"$src/go.mod" <<MOD
module archfilter.local/etcd

go 1.25

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$src/tools.go"
  (cd "$src" && GOFLAGS=-mod=mod go mod tidy) \
    || die "resolving etcd $ETCD_VERSION's dependencies failed (Go module proxy reachable?)"
  (cd "$src" && GOFLAGS=-mod=mod CGO_ENABLED=0 $NICE go build -trimpath -ldflags '-s -w' \
    -o "$out/etcd" go.etcd.io/etcd/server/v3)
}
verify_etcd() { expect_version "$1/etcd" "etcd Version: ${ETCD_VERSION#v}" "$1/etcd" --version; }
etcd_key() { tool_key etcd "$ETCD_VERSION" "$(go_key)" "$(declare -f build_etcd)"; }

# --- kube-apiserver, kube-controller-manager, kubelet, kubectl ----------------------------

# kube_ldflags VERSION mirrors the Makefile's stamping of
# k8s.io/component-base/version, so the binaries report VERSION and not
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
    if (cd "$ARCHFILTER_TOOLS_CACHE" && GOFLAGS='' go mod download "$module@v0.$minor.$p" >/dev/null 2>&1); then
      echo "v0.$minor.$p"
      return
    fi
    p=$((p - 1))
  done
  return 1
}

# build_kube_module OUT VERSION writes a tiny module that builds k8s.io/kubernetes
# VERSION's kube-apiserver. k8s.io/kubernetes requires every staging module at
# v0.0.0, so it replaces each with the matching v0.MINOR.PATCH, or the newest
# lower patch that is served (a patch skew inside the minor, as go.k8s1.35.mod
# has); the sample-* modules, which nothing built here imports, are left out.
# It is an entry of the tools cache itself: what the proxy served once is
# what every later build of that version uses (its go.mod and go.sum are part
# of the binaries' keys).
build_kube_module() {
  local out=$1 version=$2 v=${2#v}
  local mod godir staging
  mod=$(cd "$out" && GOFLAGS='' go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  [[ -f $mod ]] || die "k8s.io/kubernetes $version: the module proxy did not serve its go.mod"
  godir=$(awk '/^go /{print $2; exit}' "$mod")
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// && $1 !~ /sample-/ {print $1}' "$mod")
  # A pre-release (v1.38.0-beta.0) pins its staging modules to exactly that
  # pre-release (v0.38.0-beta.0): there is no lower patch to fall back to.
  local pre=
  if [[ $v == *-* ]]; then pre=-${v#*-}; fi
  local minor=${v%%-*} patch
  minor=${minor#*.}
  patch=${minor#*.}
  minor=${minor%%.*}
  {
    printf 'module archfilter.local/kube-%s\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$v" "$godir" "$version"
    local m served
    for m in $staging; do
      if [[ -n $pre ]]; then
        served=v0.$minor.$patch$pre
        (cd "$ARCHFILTER_TOOLS_CACHE" && GOFLAGS='' go mod download "$m@$served" >/dev/null 2>&1) ||
          die "$m $served (the staging module of k8s.io/kubernetes $version) is not served"
      else
        served=$(served_patch "$m" "$minor" "$patch") || die "$m: no v0.$minor.x up to v0.$minor.$patch is served"
      fi
      printf '\t%s => %s %s\n' "$m" "$m" "$served"
    done
    printf ')\n'
  } >"$out/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n)\n' >"$out/tools.go"
  (cd "$out" && GOFLAGS=-mod=mod go mod tidy) \
    || die "resolving k8s.io/kubernetes $version's dependencies failed (is every staging module served at v0.${v#*.}?)"
}
verify_kube_module() { [[ -s $1/go.mod && -s $1/go.sum ]]; }

# kube_source VERSION prints three lines: the directory to build VERSION's
# commands in, its go flags, and the key of its module files. The flavours'
# versions build in this module (their packages are mostly compiled already
# by the tests: no -trimpath, CGO_ENABLED=0, as the Makefile builds), other
# versions in a tiny module of their own (build_kube_module), resolved here
# when it is not in the cache yet. Other versions' controller managers are not
# built this way: the Makefile's matrix runs each API server with its
# flavour's, one minor older, as the skew policy allows.
kube_source() {
  local version=$1
  if [[ $version == "$MAIN_KUBE_VERSION" ]]; then
    printf '%s\n%s\n%s\n' "$ROOT" "" "$(files_key "$ROOT/go.mod" "$ROOT/go.sum")"
    return
  fi
  if [[ $version == "$K8S135_KUBE_VERSION" ]]; then
    printf '%s\n%s\n%s\n' "$ROOT" "-modfile=go.k8s1.35.mod" "$(files_key "$ROOT/go.k8s1.35.mod" "$ROOT/go.k8s1.35.sum")"
    return
  fi
  local key dir
  key=$(tool_key kube-module "$version" "$(go_key)" "$(declare -f build_kube_module served_patch)")
  dir=$(tool_dir "$key")
  # Progress lines go to stderr; stdout is this function's answer.
  cached_build "$key" "the module of k8s.io/kubernetes $version" verify_kube_module build_kube_module "$version" >&2
  printf '%s\n%s\n%s\n' "$dir" "" "$(files_key "$dir/go.mod" "$dir/go.sum")"
}

# build_kube OUT NAME VERSION DIR FLAGS: NAME (cmd/NAME of k8s.io/kubernetes)
# VERSION into OUT/NAME. FLAGS is empty or one -modfile flag; kubelet and
# kubectl need modules the project's go.sum does not list, so they build with
# a copy of the flavour's module file (and -mod=mod) in OUT/src.
build_kube() {
  local out=$1 name=$2 version=$3 dir=$4 flags=$5
  case $name in
    kubelet | kubectl)
      local modfile=${flags#-modfile=}
      mkdir -p "$out/src"
      cp "$dir/${modfile:-go.mod}" "$out/src/go.mod"
      cp "$dir/$(basename "${modfile:-go.mod}" .mod).sum" "$out/src/go.sum"
      flags="-modfile=$out/src/go.mod -mod=mod"
      ;;
  esac
  # shellcheck disable=SC2086 # flags is a list of flags
  (cd "$dir" && CGO_ENABLED=0 $NICE go build $flags -ldflags "$(kube_ldflags "$version")" \
    -o "$out/$name" "k8s.io/kubernetes/cmd/$name")
}
verify_kube() {
  local out=$1 name=$2 version=$3
  case $name in
    kubectl) expect_version "$out/$name" "Client Version: $version" "$out/$name" version --client ;;
    *) expect_version "$out/$name" "Kubernetes $version" "$out/$name" --version ;;
  esac
}

# kube_key NAME VERSION prints the key; KUBE_SOURCE (kube_source's lines) must be set.
kube_key() {
  tool_key "$1" "$2" "$(go_key)" "$(sed -n 3p <<<"$KUBE_SOURCE")" "goflags=${GOFLAGS:-}" \
    "$(declare -f build_kube kube_ldflags)"
}

# kube_tool NAME VERSION [--print]: build NAME VERSION (or only print its path).
kube_tool() {
  local name=$1 version=$2 key
  KUBE_SOURCE=$(kube_source "$version")
  key=$(kube_key "$name" "$version")
  if [[ ${3:-} == --print ]]; then
    echo "$(tool_dir "$key")/$name"
    return
  fi
  local dir flags from
  dir=$(sed -n 1p <<<"$KUBE_SOURCE")
  flags=$(sed -n 2p <<<"$KUBE_SOURCE")
  from="this module (${flags:-go.mod})"
  [[ $dir == "$ROOT" ]] || from="a module of its own"
  cached_build "$key" "$name $version from $from" verify_kube build_kube "$name" "$version" "$dir" "$flags"
}

# --- kwok, kwokctl ------------------------------------------------------------------------

# KWOK_KUBE_VERSION (lib.sh) tells kwokctl the version of each cluster; the
# stamped default is the main line's, so one build serves every cell.
build_kwok() {
  local out=$1
  # Outside the project module so its go.mod is neither read nor touched.
  (cd "$out" && GOBIN="$out" GOFLAGS='' CGO_ENABLED=0 $NICE go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${MAIN_KUBE_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION")
}
verify_kwok() {
  expect_version "$1/kwok" "${KWOK_VERSION#v}" "$1/kwok" --version &&
    expect_version "$1/kwokctl" "${KWOK_VERSION#v}" "$1/kwokctl" --version
}
kwok_key() { tool_key kwok "$KWOK_VERSION" "$(go_key)" "main=$MAIN_KUBE_VERSION" "$(declare -f build_kwok)"; }

# --- kustomize, benchstat: `go install module@version` ------------------------------------

KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-$(cd "$ROOT" && go list -m -f '{{.Version}}' sigs.k8s.io/kustomize/kustomize/v5)}
BENCHSTAT_VERSION=${BENCHSTAT_VERSION:-v0.0.0-20260908200009-22c9c6c9d4da}

# build_go_install OUT NAME PACKAGE VERSION: `go install PACKAGE@VERSION` into OUT.
build_go_install() {
  local out=$1 package=$3 version=$4
  (cd "$out" && GOBIN="$out" GOFLAGS='' CGO_ENABLED=0 $NICE go install -trimpath -ldflags '-s -w' "$package@$version")
}
# verify_go_install OUT NAME PACKAGE VERSION: it runs, and Go's build
# information names the module version (benchstat has no --version).
verify_go_install() {
  local out=$1 name=$2 version=$4
  case $name in
    kustomize | cyclonedx-gomod) expect_version "$out/$name" "$version" "$out/$name" version || return 1 ;;
    govulncheck) expect_version "$out/$name" "govulncheck@$version" "$out/$name" -version || return 1 ;;
    *) expect_help "$out/$name" "Usage" -h || return 1 ;;
  esac
  expect_version "$out/$name" "	$version	" go version -m "$out/$name"
}
go_install_key() { tool_key "$1" "$2" "$(go_key)" "$(declare -f build_go_install)"; }

# --- the Go vulnerability database, offline ------------------------------------------------

GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
CYCLONEDX_GOMOD_VERSION=${CYCLONEDX_GOMOD_VERSION:-v1.10.0}
# The pinned database: make vulndb-update moves it to the newest the proxy serves.
VULNDB_VERSION=${VULNDB_VERSION:-$(<"$ROOT/hack/vuln/vulndb.version")}

# build_vulndb OUT VERSION: the module golang.org/x/vulndb VERSION holds every
# report as OSV JSON (data/osv/GO-*.json); its own cmd/indexdb writes them as
# the v1 database (index/db.json, index/modules.json, ID/GO-*.json) into
# OUT/db. indexdb leaves the database's modified time zero: it is set to the
# module version's commit time, which govulncheck then reports.
build_vulndb() {
  local out=$1 version=$2 info dir infofile modified
  (cd "$out" && GOBIN="$out/bin" GOFLAGS='' CGO_ENABLED=0 $NICE go install -trimpath \
    "golang.org/x/vulndb/cmd/indexdb@$version")
  info=$(cd "$out" && GOFLAGS='' go mod download -json "golang.org/x/vulndb@$version")
  dir=$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' <<<"$info")
  infofile=$(sed -n 's/.*"Info": "\(.*\)",*/\1/p' <<<"$info")
  [[ -d $dir/data/osv ]] || die "golang.org/x/vulndb@$version has no data/osv directory ($dir)"
  modified=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$infofile")
  [[ -n $modified ]] || die "no commit time in $infofile"
  "$out/bin/indexdb" -vulns "$dir/data/osv" -out "$out/db"
  printf '{"modified":"%s"}' "$modified" >"$out/db/index/db.json"
  gzip -n -c "$out/db/index/db.json" >"$out/db/index/db.json.gz"
  rm -rf "$out/bin"
}
verify_vulndb() {
  [[ -s $1/db/index/modules.json && -s $1/db/index/vulns.json ]] || { warn "$1/db has no index"; return 1; }
  grep -q '"modified":"2' "$1/db/index/db.json" || { warn "$1/db/index/db.json has no modified time"; return 1; }
  compgen -G "$1/db/ID/GO-*.json" >/dev/null || { warn "$1/db/ID holds no report"; return 1; }
}
vulndb_key() { tool_key vulndb "$VULNDB_VERSION" "$(go_key)" "$(declare -f build_vulndb)"; }

# --- helm: the CLI of the chart tests' Helm library ----------------------------------------

HELM_MODULE_DIR=$ROOT/charts/archfilter/test
helm_version() { (cd "$HELM_MODULE_DIR" && go list -m -f '{{.Version}}' helm.sh/helm/v3); }

# build_helm OUT VERSION: helm.sh/helm/v3/cmd/helm at the chart tests' version,
# with a copy of their module file (-mod=mod adds the CLI's own few modules to
# the copy, never to the tree), stamped as Helm's releases are (its version;
# Kubernetes 1.37 for rendering without a cluster, the chart tests' client).
build_helm() {
  local out=$1 version=$2 h=helm.sh/helm/v3
  mkdir -p "$out/src"
  cp "$HELM_MODULE_DIR/go.mod" "$HELM_MODULE_DIR/go.sum" "$out/src/"
  (cd "$HELM_MODULE_DIR" && CGO_ENABLED=0 $NICE go build -modfile="$out/src/go.mod" -mod=mod \
    -ldflags "-s -w -X $h/internal/version.version=$version -X $h/pkg/chartutil.k8sVersionMajor=1 -X $h/pkg/chartutil.k8sVersionMinor=37 -X $h/pkg/lint/rules.k8sVersionMajor=1 -X $h/pkg/lint/rules.k8sVersionMinor=37" \
    -o "$out/helm" "$h/cmd/helm")
}
verify_helm() { expect_version "$1/helm" "$2" "$1/helm" version --short; }
helm_key() {
  tool_key helm "$1" "$(go_key)" "$(files_key "$HELM_MODULE_DIR/go.mod" "$HELM_MODULE_DIR/go.sum")" "$(declare -f build_helm)"
}

# --- the tools by name --------------------------------------------------------------------

tool() { # tool NAME [--print]
  local key
  case $1 in
    etcd)
      key=$(etcd_key)
      [[ ${2:-} == --print ]] && { echo "ETCD_BIN=$(tool_dir "$key")/etcd"; return; }
      cached_build "$key" "etcd $ETCD_VERSION" verify_etcd build_etcd
      ;;
    kube-apiserver)
      [[ ${2:-} == --print ]] && { echo "APISERVER_BIN=$(kube_tool kube-apiserver "$KUBE_VERSION" --print)"; return; }
      kube_tool kube-apiserver "$KUBE_VERSION"
      ;;
    kube-controller-manager)
      [[ ${2:-} == --print ]] && { echo "KCM_BIN=$(kube_tool kube-controller-manager "$KCM_VERSION" --print)"; return; }
      kube_tool kube-controller-manager "$KCM_VERSION"
      ;;
    kubelet | kubectl)
      if [[ $KUBE_VERSION != "$MAIN_KUBE_VERSION" && $KUBE_VERSION != "$K8S135_KUBE_VERSION" ]]; then
        die "$1 $KUBE_VERSION: only the flavours' versions ($MAIN_KUBE_VERSION, $K8S135_KUBE_VERSION) are built here"
      fi
      local var=KUBELET_BIN
      [[ $1 == kubectl ]] && var=KUBECTL_BIN
      [[ ${2:-} == --print ]] && { echo "$var=$(kube_tool "$1" "$KUBE_VERSION" --print)"; return; }
      kube_tool "$1" "$KUBE_VERSION"
      ;;
    kwok)
      key=$(kwok_key)
      [[ ${2:-} == --print ]] && { printf '%s\n' "KWOK_BIN=$(tool_dir "$key")/kwok" "KWOKCTL_BIN=$(tool_dir "$key")/kwokctl"; return; }
      cached_build "$key" "kwok and kwokctl $KWOK_VERSION" verify_kwok build_kwok
      ;;
    kustomize)
      key=$(go_install_key kustomize "$KUSTOMIZE_VERSION")
      [[ ${2:-} == --print ]] && { echo "KUSTOMIZE_BIN=$(tool_dir "$key")/kustomize"; return; }
      cached_build "$key" "kustomize $KUSTOMIZE_VERSION" verify_go_install build_go_install \
        kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
      ;;
    benchstat)
      key=$(go_install_key benchstat "$BENCHSTAT_VERSION")
      [[ ${2:-} == --print ]] && { echo "BENCHSTAT_BIN=$(tool_dir "$key")/benchstat"; return; }
      cached_build "$key" "benchstat $BENCHSTAT_VERSION" verify_go_install build_go_install \
        benchstat golang.org/x/perf/cmd/benchstat "$BENCHSTAT_VERSION"
      ;;
    govulncheck)
      key=$(go_install_key govulncheck "$GOVULNCHECK_VERSION")
      [[ ${2:-} == --print ]] && { echo "GOVULNCHECK_BIN=$(tool_dir "$key")/govulncheck"; return; }
      cached_build "$key" "govulncheck $GOVULNCHECK_VERSION" verify_go_install build_go_install \
        govulncheck golang.org/x/vuln/cmd/govulncheck "$GOVULNCHECK_VERSION"
      ;;
    cyclonedx-gomod)
      key=$(go_install_key cyclonedx-gomod "$CYCLONEDX_GOMOD_VERSION")
      [[ ${2:-} == --print ]] && { echo "CYCLONEDX_GOMOD_BIN=$(tool_dir "$key")/cyclonedx-gomod"; return; }
      cached_build "$key" "cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION" verify_go_install build_go_install \
        cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod "$CYCLONEDX_GOMOD_VERSION"
      ;;
    vulndb)
      key=$(vulndb_key)
      [[ ${2:-} == --print ]] && { echo "VULNDB_DIR=$(tool_dir "$key")/db"; return; }
      cached_build "$key" "the Go vulnerability database $VULNDB_VERSION" verify_vulndb build_vulndb "$VULNDB_VERSION"
      ;;
    helm)
      local hv
      hv=$(helm_version)
      key=$(helm_key "$hv")
      [[ ${2:-} == --print ]] && { echo "HELM_BIN=$(tool_dir "$key")/helm"; return; }
      cached_build "$key" "helm $hv" verify_helm build_helm "$hv"
      ;;
    scheduler)
      [[ ${2:-} == --print ]] && { echo "SCHEDULER_BIN=$SCHEDULER_BIN"; return; }
      build_scheduler
      ;;
    *) die "unknown tool $1 (etcd kube-apiserver kube-controller-manager kwok kubelet kubectl kustomize benchstat helm govulncheck vulndb cyclonedx-gomod scheduler)" ;;
  esac
}

build_scheduler() {
  if [[ -n ${ARCHFILTER_SCHEDULER_BINARY:-} ]]; then
    [[ -x $SCHEDULER_BIN ]] || die "ARCHFILTER_SCHEDULER_BINARY=$SCHEDULER_BIN is not an executable"
    return
  fi
  local start
  start=$(date +%s)
  progress_step "building bin/archfilter-scheduler (make build-main; incremental)"
  (cd "$ROOT" && $NICE make --no-print-directory build-main >/dev/null)
  info "scheduler ready in $(since "$start")"
}

# missing TOOL...: how many of these would be built (for the [i/n] progress).
missing() {
  local n=0 t p
  for t in "$@"; do
    if [[ $t == scheduler ]]; then
      [[ -n ${ARCHFILTER_SCHEDULER_BINARY:-} ]] || n=$((n + 1))
      continue
    fi
    for p in $(tool "$t" --print | cut -d= -f2-); do
      if ! tool_cached "$(dirname "$p")"; then
        n=$((n + 1))
        break
      fi
    done
  done
  echo "$n"
}

main() {
  local start tools=("$@")
  start=$(date +%s)
  ((${#tools[@]})) || tools=(etcd kube-apiserver kube-controller-manager kwok scheduler)
  progress_plan "$(missing "${tools[@]}")"
  # One at a time on purpose: each link needs ~2 GB and both cores.
  local t
  for t in "${tools[@]}"; do
    tool "$t"
  done
  [[ $_PROGRESS_TOTAL -eq 0 ]] || log "tools ready in $(since "$start") (cache: $ARCHFILTER_TOOLS_CACHE)"
}

case ${1:-} in
  --print)
    shift
    (($#)) || set -- etcd kube-apiserver kube-controller-manager kwok kubelet kubectl kustomize benchstat scheduler
    for t in "$@"; do
      # kubelet and kubectl exist for the flavours' versions only.
      if [[ $t == kubelet || $t == kubectl ]] && [[ $KUBE_VERSION != "$MAIN_KUBE_VERSION" && $KUBE_VERSION != "$K8S135_KUBE_VERSION" ]]; then
        continue
      fi
      tool "$t" --print
    done
    ;;
  --clean) clean_tools ;;
  *) main "$@" ;;
esac
