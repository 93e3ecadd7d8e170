#!/usr/bin/env bash
# make vulndb-update: pin the newest Go vulnerability database the module proxy
# serves (golang.org/x/vulndb@latest) in hack/vuln/vulndb.version, build it
# into the tools cache, and run the check against it. Commit the version file
# with whatever the check asks of hack/vuln/allowlist.yaml.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"
cd "$ROOT"

file=hack/vuln/vulndb.version
old=$(<"$file")
new=$(cd "$ARCHFILTER_CACHE" 2>/dev/null || cd /; GOFLAGS='' go list -m -f '{{.Version}}' golang.org/x/vulndb@latest) ||
  die "the module proxy did not answer for golang.org/x/vulndb@latest"
[[ $new == v* ]] || die "golang.org/x/vulndb@latest: unexpected version '$new'"
if [[ $new == "$old" ]]; then
  log "the Go vulnerability database is already the newest served: $old"
else
  echo "$new" >"$file"
  log "the Go vulnerability database: $old -> $new ($file)"
fi
VULNDB_VERSION=$new "$ROOT/hack/vuln/check.sh"
