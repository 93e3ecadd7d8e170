#!/usr/bin/env bash
# `make e2e-node`: from nothing to the placement/outcome table on a real node.
#   1. hack/node/node.sh up: Debian packages (containerd, runc, CNI plugins,
#      docker-registry, ...), the control plane, kubelet and kubectl built from
#      the module graph, a KWOK cluster with fake nodes of every architecture
#      and the real linux/amd64 node, all in a network namespace of the run.
#   2. make image: archfilter-scheduler's and archfilter-placement's multi-arch
#      images (E2E_NODE_IMAGE_PLATFORMS, default linux/amd64,linux/arm64) and
#      the k8s1.35 flavour's (E2E_NODE_K8S135_PLATFORMS, default linux/amd64:
#      its packages are compiled by make test's integration stage), pushed to
#      the node's TLS registry; the main line's built twice, which must push the
#      same digest.
#   3. test/e2enode: its own images, archfilter deployed with kubectl apply -k
#      manifests/overlays/secondary, the exec format error and the fix; then
#      the Helm chart (helm from the tools cache) with the placement mode:
#      install, the stock scheduler placing pods by the affinity it wrote,
#      upgrade, uninstall through its hook; the k8s1.35 image run once.
#   4. hack/node/node.sh down (always): no process, mount, cgroup or namespace left.
# The table is also written to .cache/e2e-node/outcome.txt.
set -euo pipefail
export CLUSTER_NAME=${CLUSTER_NAME:-archfilter-node}
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

NODE_SH=$ROOT/hack/node/node.sh
OUT=$ARCHFILTER_CACHE/e2e-node
PLATFORMS=${E2E_NODE_IMAGE_PLATFORMS:-linux/amd64,linux/arm64}
K8S135_PLATFORMS=${E2E_NODE_K8S135_PLATFORMS:-linux/amd64}
start=$(date +%s)
mkdir -p "$OUT"
rm -f "$OUT/outcome.txt"

teardown() {
  local rc=$?
  if [[ -n ${E2E_KEEP_CLUSTER:-} ]]; then
    warn "E2E_KEEP_CLUSTER is set: the node stays up (hack/node/node.sh down removes it)"
  else
    log "tearing down"
    "$NODE_SH" down || rc=1
  fi
  log "make e2e-node: $([[ $rc -eq 0 ]] && echo passed || echo FAILED) in $(since "$start")"
  exit $rc
}
trap teardown EXIT

"$NODE_SH" up
eval "$("$NODE_SH" env)"

step=$(date +%s)
log "make image: archfilter-scheduler for $PLATFORMS, pushed to $REGISTRY over TLS"
"$NODE_SH" exec make --no-print-directory -C "$ROOT" image IMAGE="$REGISTRY/archfilter/archfilter-scheduler" \
  IMAGE_FLAVOURS=main IMAGE_PLATFORMS="$PLATFORMS" REGISTRY_CA="$REGISTRY_CA" >&2
image=$(cat "$ARCHFILTER_CACHE/image/main/digest")
info "image $image in $(since "$step")"

# Two builds of one commit push the same image: the binaries are written
# again and the index assembled again, so anything that varies between builds
# (a timestamp, an ordering) changes the digest.
step=$(date +%s)
log "make image again: the same commit must give the same digest"
# go build keeps an output file whose build ID is current: remove the binaries
# so that it writes them again (from its build cache when it has the link).
rm -f "$ARCHFILTER_CACHE/image/main/"*/archfilter-scheduler
"$NODE_SH" exec make --no-print-directory -C "$ROOT" image IMAGE="$REGISTRY/archfilter/archfilter-scheduler" \
  IMAGE_FLAVOURS=main IMAGE_PLATFORMS="$PLATFORMS" REGISTRY_CA="$REGISTRY_CA" >&2
again=$(cat "$ARCHFILTER_CACHE/image/main/digest")
[[ $again == "$image" ]] || die "make image is not reproducible: $image, then $again"
info "same digest in $(since "$step")"

step=$(date +%s)
log "make image: archfilter-placement for $PLATFORMS, the k8s1.35 flavour for $K8S135_PLATFORMS"
"$NODE_SH" exec make --no-print-directory -C "$ROOT" image IMAGE="$REGISTRY/archfilter/archfilter-scheduler" \
  IMAGE_FLAVOURS=placement IMAGE_PLATFORMS="$PLATFORMS" REGISTRY_CA="$REGISTRY_CA" >&2
"$NODE_SH" exec make --no-print-directory -C "$ROOT" image IMAGE="$REGISTRY/archfilter/archfilter-scheduler" \
  IMAGE_FLAVOURS=k8s1.35 IMAGE_PLATFORMS="$K8S135_PLATFORMS" REGISTRY_CA="$REGISTRY_CA" >&2
placement_image=$(cat "$ARCHFILTER_CACHE/image/placement/digest")
k8s135_image=$(cat "$ARCHFILTER_CACHE/image/k8s1.35/digest")
info "images $placement_image, $k8s135_image in $(since "$step")"

step=$(date +%s)
log "building the e2e-node test binary"
# shellcheck disable=SC2086 # GOTESTVET is empty or one flag (make test: -vet=off)
(cd "$ROOT" && $NICE go test ${GOTESTVET:-} -c -o "$OUT/e2enode.test" ./test/e2enode)
info "built in $(since "$step")"

log "test/e2enode on node $NODE_NAME"
# The test binary runs in the package directory (it builds ./images) and in
# the run's network namespace (the API server and registry are there).
(cd "$ROOT/test/e2enode" && "$NODE_SH" exec env \
  E2E_NODE_KUBECONFIG="$KUBECONFIG" E2E_NODE_NAME="$NODE_NAME" E2E_NODE_IP="$NODE_IP" \
  E2E_NODE_REGISTRY="$REGISTRY" E2E_NODE_REGISTRY_CA="$REGISTRY_CA" E2E_NODE_PAUSE_IMAGE="$PAUSE_IMAGE" \
  E2E_NODE_ARCHFILTER_IMAGE="$image" E2E_NODE_IMAGE_PLATFORMS="$PLATFORMS" E2E_NODE_KUBECTL="$KUBECTL" E2E_NODE_OUT="$OUT" \
  E2E_NODE_PLACEMENT_IMAGE="$placement_image" E2E_NODE_K8S135_IMAGE="$k8s135_image" E2E_NODE_HELM="$HELM" \
  "$OUT/e2enode.test" -test.v -test.count=1 -test.timeout "${E2E_NODE_TIMEOUT:-15m}")
