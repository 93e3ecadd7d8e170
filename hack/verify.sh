#!/usr/bin/env bash
# Fails if formatting, vet, go.mod tidiness, generated code or the SBOMs of the
# module graphs are not as the tools would leave them, or if govulncheck finds
# a reachable vulnerability hack/vuln/allowlist.yaml does not explain. Runs on a copy-free basis: it regenerates in place and
# compares with git, so commit (or stash) before running it.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/lib/go.sh
source hack/lib/go.sh

status=0
fail() { echo "verify: $*" >&2; status=1; }
# took START STEP: how long a step took (make test's stage table has the total).
took() { echo "verify: $2 took $(($(date +%s) - $1))s" >&2; }

t=$(date +%s)
# shellcheck disable=SC2046 # one argument per file
unformatted=$(gofmt -l $(git ls-files '*.go'))
[[ -z "${unformatted}" ]] || fail "gofmt needed on: ${unformatted}"
took "$t" gofmt

# go vet of each flavour (the k8s1.35 one: same tree, its own module file and
# build tag), side by side: vet follows the packages' dependency order, so
# one alone leaves a core idle much of the time. Each one's output is printed
# whole when both are done.
t=$(date +%s)
k8s135=(-modfile=go.k8s1.35.mod -tags=k8s1.35)
vet_out=$(mktemp -d)
go vet ./... >"$vet_out/main" 2>&1 &
main_vet=$!
go vet "${k8s135[@]}" ./... ./cmd/scheduler-plugins >"$vet_out/k8s135" 2>&1 &
k8s135_vet=$!
wait "$main_vet" || fail "go vet reported problems: $(cat "$vet_out/main")"
wait "$k8s135_vet" || fail "go vet (k8s1.35 flavour) reported problems: $(cat "$vet_out/k8s135")"
rm -rf "$vet_out"
took "$t" "go vet (both flavours)"

t=$(date +%s)
go mod tidy
git diff --quiet -- go.mod go.sum || fail "go.mod/go.sum are not tidy (run: go mod tidy)"
go mod tidy -modfile=go.k8s1.35.mod
git diff --quiet -- go.k8s1.35.mod go.k8s1.35.sum || fail "go.k8s1.35.mod/.sum are not tidy (run: go mod tidy -modfile=go.k8s1.35.mod)"
took "$t" "go mod tidy (both module files)"

t=$(date +%s)
hack/update-codegen.sh >/dev/null 2>&1
generated=(apis manifests/crd charts/archfilter/crds)
if ! git diff --quiet -- "${generated[@]}" || [[ -n "$(git ls-files --others --exclude-standard "${generated[@]}")" ]]; then
  git --no-pager diff --stat -- "${generated[@]}"
  fail "generated code or CRDs are stale (run: make generate)"
fi
took "$t" codegen

# The checked-in SBOMs of both module graphs are what the module files give
# (regenerated only when a module file changed: the tools cache keeps them).
t=$(date +%s)
hack/sbom/sbom.sh modules --check || fail "hack/sbom/modules-*.cdx.json are stale (run: make sbom)"
took "$t" "SBOMs of the module graphs"

# govulncheck on what each flavour ships, offline, against the pinned database;
# every reachable finding explained by hack/vuln/allowlist.yaml. An unchanged
# tree reuses its last scan (the tools cache).
t=$(date +%s)
hack/vuln/check.sh || fail "reachable vulnerabilities not explained by hack/vuln/allowlist.yaml (above)"
took "$t" "govulncheck (both flavours)"

exit "${status}"
