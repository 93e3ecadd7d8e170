#!/usr/bin/env bash
# Fails if formatting, vet, go.mod tidiness or generated code are not as the
# tools would leave them. Runs on a copy-free basis: it regenerates in place and
# compares with git, so commit (or stash) before running it.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
fail() { echo "verify: $*" >&2; status=1; }

unformatted=$(gofmt -l $(git ls-files '*.go'))
[[ -z "${unformatted}" ]] || fail "gofmt needed on: ${unformatted}"

go vet ./... || fail "go vet reported problems"
# The k8s1.34 flavour: same tree, its own module file and build tag.
k8s134=(-modfile=go.k8s1.34.mod -tags=k8s1.34)
go vet "${k8s134[@]}" ./... ./cmd/scheduler-plugins || fail "go vet (k8s1.34 flavour) reported problems"

go mod tidy
git diff --quiet -- go.mod go.sum || fail "go.mod/go.sum are not tidy (run: go mod tidy)"
go mod tidy -modfile=go.k8s1.34.mod
git diff --quiet -- go.k8s1.34.mod go.k8s1.34.sum || fail "go.k8s1.34.mod/.sum are not tidy (run: go mod tidy -modfile=go.k8s1.34.mod)"

hack/update-codegen.sh >/dev/null 2>&1
if ! git diff --quiet -- apis || [[ -n "$(git ls-files --others --exclude-standard apis)" ]]; then
  git --no-pager diff --stat -- apis
  fail "generated code is stale (run: make generate)"
fi

exit "${status}"
