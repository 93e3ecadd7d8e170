#!/usr/bin/env bash
# make deploy / make undeploy: manifests/overlays/$OVERLAY with the image
# $IMAGE:$VERSION (the k8s1.35 overlay: $VERSION-k8s1.35; the placement
# overlay: $PLACEMENT_IMAGE:$VERSION, see lib.sh), applied to or deleted from
# the cluster kubectl points at.
#
#   deploy.sh apply     kubectl apply -k; for kubeadm-replacement also writes
#                       the node files with that image and says where they go
#   deploy.sh delete    refuses while pods still name the scheduler (they would
#                       stay Pending for ever) or, for kubeadm-replacement,
#                       while archfilter still runs as kube-scheduler, unless
#                       FORCE=1; then kubectl delete -k and the lease. For
#                       placement: scales the companion to zero, runs
#                       archfilter-placement --remove-gates (its webhook
#                       configuration, then every gate it added), then deletes
#
# Environment: IMAGE, VERSION (make sets them), OVERLAY (default secondary),
# KUBECTL (default kubectl), FORCE, PLACEMENT_IMAGE, PLACEMENT_BIN (default
# bin/archfilter-placement, make build-placement), KUBECONFIG.
set -euo pipefail
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

action=${1:?usage: deploy.sh apply|delete}
: "${IMAGE:?set IMAGE=registry/name}" "${VERSION:?set VERSION}"
OVERLAY=${OVERLAY:-secondary}
KUBECTL=${KUBECTL:-kubectl}
check_overlay "$OVERLAY"
flavour=$(overlay_flavour "$OVERLAY")
image=$(flavour_image "$flavour")
tag=$(flavour_tag "$flavour" "$VERSION")
[[ $tag == latest* ]] && die "VERSION=$VERSION: name a release, never latest"
dir=$ARCHFILTER_CACHE/deploy/$OVERLAY
if overlay_companion "$OVERLAY"; then
  pin_overlay "$dir" "$OVERLAY" "$image" "$tag" "" "$(flavour_image placement)" "$(flavour_tag placement "$VERSION")" ""
else
  pin_overlay "$dir" "$OVERLAY" "$image" "$tag" ""
fi

# The scheduler name pods opt in with, and the lease (secondary overlays).
scheduler_name=archfilter-scheduler

case $action in
  apply)
    log "applying manifests/overlays/$OVERLAY with $image:$tag$(overlay_companion "$OVERLAY" && echo " and $(flavour_image placement):$VERSION")"
    $KUBECTL apply -k "$dir"
    if [[ $OVERLAY == kubeadm-replacement ]]; then
      pin_node_files "$dir/node" "$IMAGE:$tag"
      log "RBAC applied. On every control-plane node (docs/install.md, \"kubeadm\"):"
      printf '    copy %s to /etc/kubernetes/archfilter/config.yaml\n' "$dir/node/config.yaml" >&2
      printf '    keep /etc/kubernetes/manifests/kube-scheduler.yaml outside /etc/kubernetes/manifests, then\n' >&2
      printf '    copy %s to /etc/kubernetes/manifests/kube-scheduler.yaml\n' "$dir/node/kube-scheduler.yaml" >&2
    elif [[ $flavour == placement ]]; then
      log "done: kubectl -n kube-system rollout status deployment/archfilter-placement"
    else
      log "done: kubectl -n kube-system rollout status deployment/archfilter-scheduler"
      if overlay_companion "$OVERLAY"; then
        log "      kubectl -n kube-system rollout status deployment/archfilter-$OVERLAY"
      fi
    fi
    ;;
  delete)
    if [[ $flavour == placement ]]; then
      # Stopped first, so nothing re-creates the webhook configuration; then
      # the configuration and every gate the mode added (docs/placement.md,
      # "Uninstall order").
      bin=${PLACEMENT_BIN:-$ROOT/bin/archfilter-placement}
      [[ -x $bin ]] || die "$bin is missing: make build-placement (undeploy runs its --remove-gates)"
      log "scaling the placement companion to zero"
      $KUBECTL -n kube-system scale deployment/archfilter-placement --replicas=0 2>/dev/null || true
      $KUBECTL -n kube-system wait --for=delete pod -l app.kubernetes.io/name=archfilter-placement --timeout=120s 2>/dev/null || true
      log "archfilter-placement --remove-gates"
      "$bin" --remove-gates --namespace kube-system --kubeconfig "${KUBECONFIG:-$HOME/.kube/config}"
    elif [[ $OVERLAY == kubeadm-replacement ]]; then
      images=$($KUBECTL -n kube-system get pods -l component=kube-scheduler -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}')
      if grep -q archfilter <<<"$images" && [[ -z ${FORCE:-} ]]; then
        die "archfilter still runs as kube-scheduler ($(grep archfilter <<<"$images" | sort -u | tr '\n' ' ')): put the original /etc/kubernetes/manifests/kube-scheduler.yaml back on every control-plane node first (docs/install.md, \"Uninstall\"), or FORCE=1"
      fi
    else
      pods=$($KUBECTL get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed \
        -o jsonpath="{range .items[?(@.spec.schedulerName==\"$scheduler_name\")]}{.metadata.namespace}/{.metadata.name} {.status.phase}{\"\\n\"}{end}")
      if [[ -n $pods ]]; then
        warn "these pods name spec.schedulerName: $scheduler_name; once it is gone, they (and their replacements) stay Pending:"
        sed 's/^/    /' <<<"$pods" >&2
        [[ -n ${FORCE:-} ]] || die "move their workloads to another scheduler first (docs/install.md, \"Uninstall\"), or FORCE=1"
      fi
    fi
    log "deleting manifests/overlays/$OVERLAY"
    $KUBECTL delete -k "$dir" --ignore-not-found
    if [[ $flavour == placement ]]; then
      $KUBECTL -n kube-system delete lease archfilter-placement --ignore-not-found
    elif [[ $OVERLAY != kubeadm-replacement ]]; then
      $KUBECTL -n kube-system delete lease "$scheduler_name" --ignore-not-found
      if overlay_companion "$OVERLAY"; then
        # The heal companion's own Lease (it leaves nothing else behind).
        $KUBECTL -n kube-system delete lease "archfilter-$OVERLAY" --ignore-not-found
      fi
    fi
    ;;
  *) die "unknown action $action (apply, delete)" ;;
esac
