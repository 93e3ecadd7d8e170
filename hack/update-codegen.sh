#!/usr/bin/env bash
# Regenerates deepcopy, defaulting and conversion code for apis/ with the
# code-generator version pinned in go.mod.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/go.sh
source "${ROOT}/hack/lib/go.sh"
cd "${ROOT}"
BOILERPLATE=hack/boilerplate.go.txt
MODULE=$(go list -m)

rm -f apis/config/zz_generated.*.go apis/config/v1/zz_generated.*.go

go run k8s.io/code-generator/cmd/deepcopy-gen \
  --output-file zz_generated.deepcopy.go --go-header-file "${BOILERPLATE}" \
  "${MODULE}/apis/config" "${MODULE}/apis/config/v1"
go run k8s.io/code-generator/cmd/defaulter-gen \
  --output-file zz_generated.defaults.go --go-header-file "${BOILERPLATE}" \
  "${MODULE}/apis/config/v1"
go run k8s.io/code-generator/cmd/conversion-gen \
  --output-file zz_generated.conversion.go --go-header-file "${BOILERPLATE}" \
  --extra-peer-dirs k8s.io/apimachinery/pkg/apis/meta/v1,k8s.io/apimachinery/pkg/conversion,k8s.io/apimachinery/pkg/runtime \
  "${MODULE}/apis/config/v1"
