#!/usr/bin/env bash
# Regenerates deepcopy, defaulting and conversion code for apis/ with the
# code-generator version pinned in go.mod, and the CRDs of apis/policy with
# controller-gen (CONTROLLER_TOOLS_VERSION), into manifests/crd and the
# chart's crds/.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/go.sh
source "${ROOT}/hack/lib/go.sh"
cd "${ROOT}"
BOILERPLATE=hack/boilerplate.go.txt
MODULE=$(go list -m)

rm -f apis/config/zz_generated.*.go apis/config/v1/zz_generated.*.go apis/policy/v1alpha1/zz_generated.*.go

go run k8s.io/code-generator/cmd/deepcopy-gen \
  --output-file zz_generated.deepcopy.go --go-header-file "${BOILERPLATE}" \
  "${MODULE}/apis/config" "${MODULE}/apis/config/v1" "${MODULE}/apis/policy/v1alpha1"
go run k8s.io/code-generator/cmd/defaulter-gen \
  --output-file zz_generated.defaults.go --go-header-file "${BOILERPLATE}" \
  "${MODULE}/apis/config/v1"
go run k8s.io/code-generator/cmd/conversion-gen \
  --output-file zz_generated.conversion.go --go-header-file "${BOILERPLATE}" \
  --extra-peer-dirs k8s.io/apimachinery/pkg/apis/meta/v1,k8s.io/apimachinery/pkg/conversion,k8s.io/apimachinery/pkg/runtime \
  "${MODULE}/apis/config/v1"

# The CRD, from the kubebuilder markers of apis/policy/v1alpha1. controller-gen
# is run at a pinned version outside go.mod: it is a build tool, not a
# dependency of anything archfilter ships.
CONTROLLER_TOOLS_VERSION=${CONTROLLER_TOOLS_VERSION:-v0.23.0}
CRD_DIR=manifests/crd
CRD=archfilter.io_archfilterpolicies.yaml
go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_TOOLS_VERSION}" \
  crd:allowDangerousTypes=false paths=./apis/policy/... output:crd:artifacts:config="${CRD_DIR}"
# Helm's crds/ directory: installed before the chart's templates when absent,
# never upgraded or deleted by Helm, owned by no release.
mkdir -p charts/archfilter/crds
cp "${CRD_DIR}/${CRD}" charts/archfilter/crds/
