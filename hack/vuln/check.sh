#!/usr/bin/env bash
# make verify's vulnerability check, offline: govulncheck (pinned,
# GOVULNCHECK_VERSION in hack/cluster/tools.sh) against the Go vulnerability
# database generated from the module proxy's golang.org/x/vulndb (the version
# in hack/vuln/vulndb.version), at symbol level, on the commands archfilter
# ships in each flavour; then hack/vuln judges the reachable findings against
# hack/vuln/allowlist.yaml (fails on one not explained, or on an expired entry).
#
# Each scan's JSON output is kept in the tools
# cache, keyed by everything that determines it (govulncheck, database, Go
# toolchain, the module files and the Go files of this module that the
# scanned commands build from): an unchanged tree is not scanned again, by any
# clone.
#
#   hack/vuln/check.sh            scan (or reuse) and judge
#   VULN_TODAY=YYYY-MM-DD         judge expiry against that day instead of today
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"
cd "$ROOT"

"$ROOT/hack/cluster/tools.sh" govulncheck vulndb >&2
eval "$("$ROOT/hack/cluster/tools.sh" --print govulncheck vulndb)"

# The packages of what ships: the binaries' mains (test code and hack/ are not scanned).
MAIN_PKGS=(./cmd/scheduler ./cmd/archfilter-placement ./cmd/kubectl-archfilter)
K8S135_PKGS=(./cmd/scheduler-plugins)

# build_scan OUT FLAVOUR: govulncheck -format json of FLAVOUR into OUT/scan.json.gz.
build_scan() {
  local out=$1 flavour=$2 rc=0
  case $flavour in
    main)
      (cd "$ROOT" && $NICE "$GOVULNCHECK_BIN" -db "file://$VULNDB_DIR" -format json "${MAIN_PKGS[@]}") >"$out/scan.json" || rc=$?
      ;;
    k8s1.35)
      # go/packages asks `go list` for the release tags with GO111MODULE=off,
      # which refuses a -modfile in GOFLAGS: a go of our own on PATH drops
      # -modfile from GOFLAGS for that call only.
      mkdir -p "$out/shim"
      # shellcheck disable=SC2016 # the shim's own $GO111MODULE, $GOFLAGS, $@
      printf '#!/bin/sh\nif [ "$GO111MODULE" = off ]; then GOFLAGS=$(printf %%s "$GOFLAGS" | sed "s/-modfile=[^ ]*//g"); export GOFLAGS; fi\nexec %q "$@"\n' \
        "$(command -v go)" >"$out/shim/go"
      chmod +x "$out/shim/go"
      (cd "$ROOT" && PATH="$out/shim:$PATH" GOFLAGS="${GOFLAGS:-} -modfile=go.k8s1.35.mod" \
        $NICE "$GOVULNCHECK_BIN" -db "file://$VULNDB_DIR" -tags k8s1.35 -format json "${K8S135_PKGS[@]}") >"$out/scan.json" || rc=$?
      rm -rf "$out/shim"
      ;;
  esac
  ((rc == 0)) || { warn "govulncheck ($flavour) exited $rc: $(tail -c 2000 "$out/scan.json")"; return 1; }
  gzip -n "$out/scan.json"
}
# (grep -c reads it all: grep -q would stop gzip early, which pipefail reports.)
verify_scan() { (($(gzip -dc "$1/scan.json.gz" | grep -c '"scan_level": *"symbol"') > 0)); }

# sources_key FLAVOUR: the hash of what a scan of FLAVOUR reads from this
# tree: the module files and the Go files (tests excluded) of this module's
# packages among the scanned commands' dependencies. A change to a test,
# hack/ or docs reuses the last scan.
sources_key() {
  local flavour=$1 flags=() pkgs=("${MAIN_PKGS[@]}")
  if [[ $flavour == k8s1.35 ]]; then
    flags=(-modfile=go.k8s1.35.mod -tags=k8s1.35)
    pkgs=("${K8S135_PKGS[@]}")
  fi
  {
    sha256sum go.mod go.sum go.k8s1.35.mod go.k8s1.35.sum
    # shellcheck disable=SC2016 # a Go template
    go list "${flags[@]}" -deps -f '{{if and .Module .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}' "${pkgs[@]}" | grep . | LC_ALL=C sort | xargs sha256sum | sed "s#$ROOT/##"
  } | sha256sum | cut -c1-16
}

start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
# One after the other: a scan holds about 5 GB (the whole program's SSA).
for flavour in main k8s1.35; do
  key=$(tool_key "vulnscan-$flavour" "$(sources_key "$flavour")" "$(go_key)" "govulncheck=$GOVULNCHECK_BIN" "db=$VULNDB_DIR" \
    "$(declare -f build_scan)" "pkgs=${MAIN_PKGS[*]} ${K8S135_PKGS[*]}")
  dir=$(tool_dir "$key")
  if tool_cached "$dir"; then
    info "govulncheck of the $flavour flavour: this tree's scan, from the tools cache"
  fi
  cached_build "$key" "govulncheck of the $flavour flavour" verify_scan build_scan "$flavour"
  gzip -dc "$dir/scan.json.gz" >"$work/$flavour.json"
  args+=("$flavour=$work/$flavour.json")
done
# Scans of trees a week old are of no further use.
find "$ARCHFILTER_TOOLS_CACHE" -maxdepth 1 -name 'vulnscan-*' -type d -mtime +7 -exec rm -rf {} + 2>/dev/null || true
go run ./hack/vuln -allowlist hack/vuln/allowlist.yaml ${VULN_TODAY:+-today "$VULN_TODAY"} "${args[@]}"
info "vulnerability check took $(since "$start")"
