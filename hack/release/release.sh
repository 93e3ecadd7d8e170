#!/usr/bin/env bash
# make release VERSION=vX.Y.Z: everything a release publishes, into $DIST
# (default dist/):
#   - the images of both flavours, pushed by make image to $IMAGE:$VERSION and
#     $IMAGE:$VERSION-k8s1.35, and the placement companion's to
#     $PLACEMENT_IMAGE:$VERSION (images.txt names them with their digests);
#   - manifests/<overlay>.yaml for every overlay, rendered by kustomize with the
#     image pinned by digest, manifests/kubeadm-replacement/node/ likewise, and
#     manifests/monitoring.yaml plus grafana-dashboard.json;
#   - archfilter-<X.Y.Z>.tgz, the Helm chart with appVersion $VERSION and
#     image.repository $IMAGE (the companion's named from it, or
#     placement.image.repository $PLACEMENT_IMAGE when that is not the name
#     the chart derives): its defaults pull what this release pushed;
#   - helm-values.yaml: the same images as values for the chart in the tree
#     (charts/archfilter, whose appVersion may be another release's), the
#     file the recipes of docs/install.md are written like;
#   - kubectl-archfilter_<version>_<os>_<arch>.tar.gz (+ .sha256) when
#     cmd/kubectl-archfilter exists;
#   - sbom/<binary>_<version>_<os>_<arch>.cdx.json: the CycloneDX SBOM of every
#     binary released (each image's per platform, each kubectl-archfilter
#     archive's), from the build information Go wrote into it
#     (hack/sbom/sbom.sh binary); sbom/referrers.txt names the SBOM artifact
#     pushed beside each image index (make image);
#   - SHA256SUMS of every file.
# It refuses a VERSION that is not a release tag (vMAJOR.MINOR.PATCH with an
# optional -pre-release).
#
# Environment: VERSION, IMAGE, GIT_COMMIT, BUILD_DATE (make sets them), DIST,
# IMAGE_PLATFORMS, REGISTRY_CA (passed to make image), KUSTOMIZE (default
# kubectl kustomize), CLI_PLATFORMS (default linux/amd64 linux/arm64
# darwin/amd64 darwin/arm64 windows/amd64), RELEASE_SKIP_IMAGES=1 to reuse the
# digests of the last make image (the same VERSION and IMAGE).
set -euo pipefail
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
cd "$ROOT"

: "${VERSION:?}" "${IMAGE:?set IMAGE=registry/name}" "${GIT_COMMIT:?}" "${BUILD_DATE:?}"
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
[[ $VERSION =~ $semver ]] ||
  die "VERSION=$VERSION is not a release tag: vMAJOR.MINOR.PATCH[-PRERELEASE], e.g. make release VERSION=v0.1.0"
DIST=${DIST:-$ROOT/dist}
MAKE=${MAKE:-make}
CLI_PLATFORMS=${CLI_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}
IMAGE_OUT=$ARCHFILTER_CACHE/image
rm -rf "$DIST"
mkdir -p "$DIST/manifests"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# 1. The images; hack/image writes REFERENCE@DIGEST of each pushed index.
if [[ -z ${RELEASE_SKIP_IMAGES:-} ]]; then
  rm -f "$IMAGE_OUT"/*/digest
  log "images $IMAGE:$VERSION, $IMAGE:$VERSION-k8s1.35 and $(flavour_image placement):$VERSION (make image)"
  $MAKE --no-print-directory image IMAGE="$IMAGE" PLACEMENT_IMAGE="$(flavour_image placement)" VERSION="$VERSION" \
    IMAGE_FLAVOURS="main k8s1.35 placement" >&2
fi
declare -A digest
for flavour in main k8s1.35 placement; do
  f=$IMAGE_OUT/$flavour/digest
  [[ -f $f ]] || die "$f missing: make image did not push the $flavour image"
  ref=$(<"$f")
  digest[$flavour]=${ref##*@}
  [[ ${digest[$flavour]} =~ ^sha256:[0-9a-f]{64}$ ]] || die "$f: $ref has no sha256 digest"
  echo "$(flavour_image "$flavour"):$(flavour_tag "$flavour" "$VERSION")@${digest[$flavour]}" >>"$DIST/images.txt"
  # The SBOMs make image wrote beside each platform's binary, and the artifact
  # that attaches them to the index.
  mkdir -p "$DIST/sbom"
  f=$IMAGE_OUT/$flavour/sbom-digest
  [[ -f $f ]] || die "$f missing: make image did not push the $flavour image's SBOM artifact"
  echo "$(flavour_image "$flavour")@${digest[$flavour]} $(<"$f")" >>"$DIST/sbom/referrers.txt"
  bin_name=archfilter-scheduler
  [[ $flavour == placement ]] && bin_name=archfilter-placement
  n=0
  for sbom in "$IMAGE_OUT/$flavour"/*/"$bin_name.cdx.json"; do
    [[ -f $sbom ]] || continue
    plat=$(basename "$(dirname "$sbom")") # linux-amd64
    cp "$sbom" "$DIST/sbom/${bin_name}_$(flavour_tag "$flavour" "$VERSION")_${plat//-/_}.cdx.json"
    n=$((n + 1))
  done
  ((n > 0)) || die "no SBOM of the $flavour image's binaries in $IMAGE_OUT/$flavour"
done

# 2. Manifests, the image pinned by digest.
for overlay in "${OVERLAYS[@]}"; do
  flavour=$(overlay_flavour "$overlay")
  d=${digest[$flavour]}
  if overlay_companion "$overlay"; then
    pin_overlay "$work/$overlay" "$overlay" "$(flavour_image "$flavour")" "" "$d" "$(flavour_image placement)" "" "${digest[placement]}"
  else
    pin_overlay "$work/$overlay" "$overlay" "$(flavour_image "$flavour")" "" "$d"
  fi
  kustomize_build "$work/$overlay" >"$DIST/manifests/$overlay.yaml"
  log "manifests/$overlay.yaml ($(flavour_image "$flavour")@$d$(overlay_companion "$overlay" && echo ", $(flavour_image placement)@${digest[placement]}"))"
done
pin_node_files "$DIST/manifests/kubeadm-replacement/node" "$IMAGE@${digest[main]}"
kustomize_build "$ROOT/manifests/monitoring" >"$DIST/manifests/monitoring.yaml"
cp "$ROOT/manifests/monitoring/grafana-dashboard.json" "$DIST/grafana-dashboard.json"
# Every image of every rendered manifest is pinned by digest (an overlay
# whose image kustomize's images: did not reach would show here).
if grep -rnE '^\s*(- )?image: ' "$DIST/manifests" | grep -v '@sha256:' >&2; then
  die "rendered manifests name images (above) not pinned by digest"
fi

# 3. The Helm chart (Helm's library, charts/archfilter/test/chartpackage).
log "Helm chart ${VERSION#v}, appVersion $VERSION"
placement_repository=
[[ $(flavour_image placement) == "${IMAGE%-scheduler}-placement" ]] || placement_repository=$(flavour_image placement)
(cd "$ROOT/charts/archfilter/test" && go run ./chartpackage -chart "$ROOT/charts/archfilter" \
  -version "${VERSION#v}" -app-version "$VERSION" -repository "$IMAGE" \
  ${placement_repository:+-placement-repository "$placement_repository"} -out "$DIST") >&2
{
  echo "# make release VERSION=$VERSION IMAGE=$IMAGE: the images it pushed, as values of"
  echo "# charts/archfilter (archfilter-${VERSION#v}.tgz has them as its defaults already)."
  echo "# Digests: images.txt (image.digest, placement.image.digest)."
  helm_values "$VERSION"
} >"$DIST/helm-values.yaml"

# 4. kubectl-archfilter, once it exists (CLI_PKG: its package).
CLI_PKG=${CLI_PKG:-./cmd/kubectl-archfilter}
if [[ -d $ROOT/$CLI_PKG ]]; then
  ldflags=$($MAKE --no-print-directory -s ldflags VERSION="$VERSION" GIT_COMMIT="$GIT_COMMIT" BUILD_DATE="$BUILD_DATE")
  for plat in $CLI_PLATFORMS; do
    os=${plat%/*} arch=${plat#*/}
    exe=kubectl-archfilter
    [[ $os == windows ]] && exe=kubectl-archfilter.exe
    log "kubectl-archfilter $os/$arch"
    mkdir -p "$work/cli/$os-$arch"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$work/cli/$os-$arch/$exe" "$CLI_PKG"
    cp LICENSE "$work/cli/$os-$arch/"
    files=("$exe" LICENSE)
    # kubectl 1.26+ completes plugin arguments through kubectl_complete-<plugin>
    # on PATH; the script is POSIX sh, so not for Windows.
    if [[ $os != windows ]]; then
      install -m 0755 "$ROOT/$CLI_PKG/kubectl_complete-archfilter" "$work/cli/$os-$arch/"
      files+=(kubectl_complete-archfilter)
    fi
    archive=kubectl-archfilter_${VERSION}_${os}_${arch}.tar.gz
    # Reproducible: fixed owner, order and times.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$BUILD_DATE" \
      -C "$work/cli/$os-$arch" -cf - "${files[@]}" | gzip -n >"$DIST/$archive"
    (cd "$DIST" && sha256sum "$archive" >"$archive.sha256")
    hack/sbom/sbom.sh binary "$work/cli/$os-$arch/$exe" "$VERSION" "$DIST/sbom/kubectl-archfilter_${VERSION}_${os}_${arch}.cdx.json"
  done
else
  warn "$CLI_PKG does not exist: no kubectl-archfilter archives"
fi

(cd "$DIST" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)
log "release $VERSION in $DIST ($(($(date +%s) - start))s):"
(cd "$DIST" && find . -type f -printf '    %P\n' | sort) >&2
# The install commands that pull exactly these images.
dist=${DIST#"$ROOT"/}
cat <<HINT
Install release $VERSION (images $IMAGE:$VERSION, $IMAGE:$VERSION-k8s1.35, $(flavour_image placement):$VERSION):
  helm install archfilter $dist/archfilter-${VERSION#v}.tgz -n kube-system
or with the chart in the tree (the values in $dist/helm-values.yaml; the recipes in docs/install.md set the same):
  helm install archfilter charts/archfilter -n kube-system $(helm_set "$VERSION")
or the manifests, pinned by digest:
  kubectl apply -f $dist/manifests/secondary.yaml
HINT
