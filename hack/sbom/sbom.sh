#!/usr/bin/env bash
# CycloneDX SBOMs from the Go module graph, by cyclonedx-gomod (pinned:
# CYCLONEDX_GOMOD_VERSION in hack/cluster/tools.sh, built into the tools cache),
# normalised by hack/sbom (no generator hashes; no timestamps or serial numbers).
#
#   hack/sbom/sbom.sh modules           write hack/sbom/modules-FLAVOUR.cdx.json, the module
#                                       graph of go.mod (main) and go.k8s1.35.mod (make sbom)
#   hack/sbom/sbom.sh modules --check   fail if they are not what the module files give (make verify)
#   hack/sbom/sbom.sh binary BIN VERSION OUT
#                                       the SBOM of a built binary, from the build information
#                                       Go wrote into it (the modules actually linked, with their
#                                       go.sum hashes; make release, make image)
#
# The module graphs' SBOMs are kept in the tools cache, keyed by the module
# files, the generator and the normaliser: make verify regenerates one only
# when they changed.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"
cd "$ROOT"

FLAVOURS=(main k8s1.35)
"$ROOT/hack/cluster/tools.sh" cyclonedx-gomod >&2
eval "$("$ROOT/hack/cluster/tools.sh" --print cyclonedx-gomod)"

modfile() { [[ $1 == main ]] && echo go.mod || echo go.k8s1.35.mod; }
checked_in() { echo "$ROOT/hack/sbom/modules-$1.cdx.json"; }

# build_modules_sbom OUT FLAVOUR: the module graph of FLAVOUR's module file
# (every module it requires, test-only ones included), package URLs without
# platform qualifiers (the graph is the same on every platform).
build_modules_sbom() {
  local out=$1 flavour=$2 mf
  mf=$(modfile "$flavour")
  (cd "$ROOT" && GOFLAGS="${GOFLAGS:-} -modfile=$mf" "$CYCLONEDX_GOMOD_BIN" mod -json -noserial -notimestamp \
    -short-purls -output "$out/raw.cdx.json" . 2> >(grep -v 'failed to determine version of main module' >&2))
  (cd "$ROOT" && go run ./hack/sbom -unversioned "$out/raw.cdx.json" "$out/modules.cdx.json")
  rm "$out/raw.cdx.json"
}
verify_modules_sbom() { grep -q '"bomFormat": "CycloneDX"' "$1/modules.cdx.json"; }

modules_sbom() { # modules_sbom FLAVOUR: the cached SBOM's path (built when missing)
  local flavour=$1 mf key
  mf=$(modfile "$flavour")
  key=$(tool_key "sbom-modules-$flavour" "$(files_key "$mf" "${mf%.mod}.sum" | cut -d= -f2)" "$(go_key)" \
    "generator=$CYCLONEDX_GOMOD_BIN" "$(files_key hack/sbom/main.go)" "$(declare -f build_modules_sbom)")
  cached_build "$key" "the SBOM of the $flavour module graph" verify_modules_sbom build_modules_sbom "$flavour" >&2
  echo "$(tool_dir "$key")/modules.cdx.json"
}

case ${1:-} in
  modules)
    status=0
    for flavour in "${FLAVOURS[@]}"; do
      generated=$(modules_sbom "$flavour")
      want=$(checked_in "$flavour")
      if [[ ${2:-} == --check ]]; then
        mkdir -p "$ARCHFILTER_CACHE"
        if ! diff -u "$want" "$generated" >"$ARCHFILTER_CACHE/sbom-$flavour.diff" 2>&1; then
          head -40 "$ARCHFILTER_CACHE/sbom-$flavour.diff" >&2
          warn "${want#"$ROOT"/} is not the SBOM of $(modfile "$flavour")'s module graph (run: make sbom; whole diff in .cache/sbom-$flavour.diff)"
          status=1
        fi
      else
        cp "$generated" "$want"
        log "${want#"$ROOT"/}"
      fi
    done
    exit "$status"
    ;;
  binary)
    (($# == 4)) || die "usage: $0 binary BIN VERSION OUT"
    bin=$2 version=$3 out=$4
    [[ -f $bin ]] || die "$bin: no such binary"
    raw=$(mktemp)
    "$CYCLONEDX_GOMOD_BIN" bin -json -noserial -notimestamp -version "$version" -output "$raw" "$bin" ||
      { rm -f "$raw"; die "cyclonedx-gomod could not read Go's build information in $bin"; }
    go run ./hack/sbom "$raw" "$out"
    rm -f "$raw"
    ;;
  *) die "usage: $0 modules [--check] | binary BIN VERSION OUT" ;;
esac
