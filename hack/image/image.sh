#!/usr/bin/env bash
# Builds archfilter's multi-platform image of each flavour without a container
# engine and pushes it: cross-compiles the scheduler per platform (make
# build-FLAVOUR with GOOS/GOARCH) and writes each binary's CycloneDX SBOM
# (hack/sbom/sbom.sh binary), then hack/image (internal/ociimage) assembles
# the OCI index, whose entries name their SBOM's digest, pushes it to
# $IMAGE:$VERSION (main line) and
# $IMAGE:$VERSION-k8s1.35; the placement mode's companion likewise to
# $PLACEMENT_IMAGE:$VERSION, and beside each index the SBOM artifact that
# refers to it (OCI 1.1 subject: the referrers API, or the referrers tag
# schema on registries without it). `make image` runs it.
#
# Environment (make image sets them):
#   IMAGE            registry/name to push to, e.g. 127.0.0.1:5001/archfilter/archfilter-scheduler
#   VERSION          the tag of the main line (git describe)
#   GIT_COMMIT, BUILD_DATE   stamped into binaries and labels; BUILD_DATE is also
#                    the image's creation time (the commit's time: reproducible)
#   IMAGE_PLATFORMS  comma-separated, default linux/amd64,linux/arm64,linux/ppc64le,linux/s390x
#   IMAGE_FLAVOURS   space-separated, default "main k8s1.35 placement"
#   PLACEMENT_IMAGE  registry/name of the companion, default $IMAGE with
#                    -placement in place of its -scheduler suffix
#   REGISTRY_CA      PEM CA of the registry's certificate (local registries), optional
#   IMAGE_LAYOUT     also write each index as an OCI layout under this directory, optional
#
# Last it prints what installs exactly these images (the chart's --set flags,
# make deploy's variables) and writes the chart's values to
# $ARCHFILTER_CACHE/image/helm-values.yaml: the chart in the tree runs its
# appVersion unless image.tag names the VERSION pushed here.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=hack/lib/go.sh
source "$ROOT/hack/lib/go.sh"
# shellcheck source=hack/deploy/lib.sh
source "$ROOT/hack/deploy/lib.sh"
cd "$ROOT"

: "${IMAGE:?set IMAGE=registry/name}" "${VERSION:?}" "${GIT_COMMIT:?}" "${BUILD_DATE:?}"
IMAGE_PLATFORMS=${IMAGE_PLATFORMS:-linux/amd64,linux/arm64,linux/ppc64le,linux/s390x}
IMAGE_FLAVOURS=${IMAGE_FLAVOURS:-main k8s1.35 placement}
PLACEMENT_IMAGE=${PLACEMENT_IMAGE:-${IMAGE%-scheduler}-placement}
OUT=${ARCHFILTER_CACHE:-$ROOT/.cache}/image
MAKE=${MAKE:-make}

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }

for flavour in $IMAGE_FLAVOURS; do
  image=$IMAGE name=archfilter-scheduler target=build-$flavour
  description="kube-scheduler with the ArchFilter plugin ($flavour flavour)"
  case $flavour in
    main) tag=$VERSION ;;
    k8s1.35) tag=$VERSION-k8s1.35 ;;
    placement)
      tag=$VERSION image=$PLACEMENT_IMAGE name=archfilter-placement
      description="ArchFilter's placement mode: writes the node affinity pods' images need" ;;
    *) echo "IMAGE_FLAVOURS: unknown flavour $flavour (main, k8s1.35, placement)" >&2; exit 2 ;;
  esac
  args=()
  IFS=, read -ra platforms <<<"$IMAGE_PLATFORMS"
  for plat in "${platforms[@]}"; do
    IFS=/ read -r goos goarch variant <<<"$plat"
    goarm=
    if [[ $goarch == arm && -n ${variant:-} ]]; then goarm=${variant#v}; fi
    bin=$OUT/$flavour/${plat//\//-}/$name
    log "$flavour: building $plat"
    GOOS=$goos GOARCH=$goarch GOARM=$goarm $MAKE --no-print-directory "$target" \
      VERSION="$VERSION" GIT_COMMIT="$GIT_COMMIT" BUILD_DATE="$BUILD_DATE" \
      BINARY="$bin" BINARY_K8S135="$bin" BINARY_PLACEMENT="$bin" >/dev/null
    # The binary's SBOM, from the build information Go wrote into it.
    hack/sbom/sbom.sh binary "$bin" "$tag" "$bin.cdx.json"
    args+=(--binary "$plat=$bin" --sbom "$plat=$bin.cdx.json")
  done
  log "$flavour: image index $image:$tag"
  go run ./hack/image --image "$image:$tag" "${args[@]}" \
    --go-version "$GOTOOLCHAIN" \
    --entrypoint "/usr/local/bin/$name" \
    --created "$BUILD_DATE" \
    --label "org.opencontainers.image.title=$name" \
    --label "org.opencontainers.image.description=$description" \
    --label "org.opencontainers.image.version=$VERSION" \
    --label "org.opencontainers.image.revision=$GIT_COMMIT" \
    --label "org.opencontainers.image.created=$BUILD_DATE" \
    --label "org.opencontainers.image.source=https://github.com/archfilter/archfilter" \
    --label "org.opencontainers.image.licenses=Apache-2.0" \
    --label "io.archfilter.flavour=$flavour" \
    ${REGISTRY_CA:+--registry-ca "$REGISTRY_CA"} \
    ${IMAGE_LAYOUT:+--layout "$IMAGE_LAYOUT/$flavour"} \
    --digest-file "$OUT/$flavour/digest" \
    --sbom-digest-file "$OUT/$flavour/sbom-digest"
done

# What runs exactly these images: the chart in the tree (its appVersion is a
# release's, not this VERSION) and the kustomize overlays.
helm_values "$VERSION" >"$OUT/helm-values.yaml"
pushed=
for flavour in $IMAGE_FLAVOURS; do pushed+="${pushed:+, }$(flavour_image "$flavour"):$(flavour_tag "$flavour" "$VERSION")"; done
cat <<HINT
Pushed $pushed.
Install exactly these with the chart (or -f ${OUT#"$ROOT"/}/helm-values.yaml; add --set image.flavour=k8s1.35 for the k8s1.35 flavour):
  helm install archfilter charts/archfilter -n kube-system $(helm_set "$VERSION")
or the manifests:
  make deploy IMAGE=$IMAGE VERSION=$VERSION
HINT
