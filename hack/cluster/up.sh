#!/usr/bin/env bash
# Brings up (or reuses) a local KWOK cluster whose control plane is real
# (etcd, kube-apiserver, kube-controller-manager built by tools.sh, run as
# plain processes by `kwokctl --runtime binary`) and whose nodes are fake:
# linux/amd64, linux/arm64, linux/ppc64le, linux/s390x and windows/amd64.
#
# The cluster's kube-scheduler is bin/archfilter-scheduler:
#   hack/cluster/up.sh                          no --config: the upstream default
#                                               profile, i.e. plain kube-scheduler
#   hack/cluster/up.sh --scheduler-config FILE  FILE is its KubeSchedulerConfiguration
#                                               (kwokctl fills in clientConnection.kubeconfig),
#                                               e.g. archfilter as the default scheduler
#   hack/cluster/up.sh --no-scheduler           no scheduler at all
# A cluster already running with the same settings (and the same scheduler
# binary) is reused (a second or two); otherwise it is recreated (~5 seconds).
#
# Environment: CLUSTER_NAME (default archfilter), ARCHFILTER_CACHE (default .cache),
# ARCHFILTER_SCHEDULER_BINARY (default bin/archfilter-scheduler), KWOK_EXTRA_ARGS
# (space-separated component=flag=value for kwokctl --extra-args; hack/node
# uses it to leave its real node to its kubelet), FAKE_NODES=0 (no fake nodes:
# test/karpenter starts with none and lets Karpenter create them).
# Prints nothing on stdout but the kubeconfig path, so scripts can capture it.
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

scheduler_config=
no_scheduler=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --scheduler-config) scheduler_config=$(realpath "$2"); shift 2 ;;
    --no-scheduler) no_scheduler=true; shift ;;
    *) die "unknown argument $1 (see the comment at the top of $0)" ;;
  esac
done
[[ -z $scheduler_config || -f $scheduler_config ]] || die "--scheduler-config: $scheduler_config does not exist"

start=$(date +%s)
"$ROOT/hack/cluster/tools.sh"
eval "$("$ROOT/hack/cluster/tools.sh" --print etcd kube-apiserver kube-controller-manager kwok)"

KUBECONFIG_OUT=$ARCHFILTER_CACHE/$CLUSTER_NAME.kubeconfig
STATE=$KWOK_WORKDIR/clusters/$CLUSTER_NAME
SPEC_FILE=$KWOK_WORKDIR/$CLUSTER_NAME.spec
DEMO_BIN=$LOCAL_BIN/archfilter-demo

# Everything that, when changed, requires a new cluster.
spec=$(printf '%s\n' "kube=$APISERVER_BIN" "kcm=$KCM_BIN" "kwok=$KWOK_BIN" "etcd=$ETCD_BIN" \
  "scheduler=$SCHEDULER_BIN $(stat -c '%s %Y' "$SCHEDULER_BIN")" "no-scheduler=$no_scheduler" \
  "config=${scheduler_config:+$(sha256sum <"$scheduler_config" | cut -c1-16)}" "extra-args=${KWOK_EXTRA_ARGS:-}")

kwokctl() { "$KWOKCTL_BIN" --name "$CLUSTER_NAME" "$@"; }

healthy() {
  [[ -f $KUBECONFIG_OUT && -f $SPEC_FILE && $(cat "$SPEC_FILE") == "$spec" ]] || return 1
  # `kwokctl get clusters` lists it and the API server answers.
  kwokctl get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME" || return 1
  "$DEMO_BIN" ping --kubeconfig "$KUBECONFIG_OUT" >/dev/null 2>&1
}

log "building the demo/e2e helper (hack/demo; incremental)"
mkdir -p "$LOCAL_BIN"
(cd "$ROOT" && $NICE go build -o "$DEMO_BIN" ./hack/demo)

if healthy; then
  log "reusing KWOK cluster $CLUSTER_NAME (same settings, API server answering)"
else
  if kwokctl get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME" || [[ -d $STATE ]]; then
    log "deleting KWOK cluster $CLUSTER_NAME (settings changed or unhealthy)"
    kwokctl delete cluster --kubeconfig "$KUBECONFIG_OUT" >/dev/null 2>&1 || true
    rm -rf "$STATE"
  fi
  log "creating KWOK cluster $CLUSTER_NAME (kube $KUBE_VERSION, runtime binary)"
  args=(
    create cluster --runtime binary --wait 2m
    --kubeconfig "$KUBECONFIG_OUT"
    --etcd-binary "$ETCD_BIN"
    --kube-apiserver-binary "$APISERVER_BIN"
    --kube-controller-manager-binary "$KCM_BIN"
    --kwok-controller-binary "$KWOK_BIN"
  )
  for extra in ${KWOK_EXTRA_ARGS:-}; do
    args+=(--extra-args "$extra")
  done
  if $no_scheduler; then
    args+=(--disable kube-scheduler)
  else
    args+=(--kube-scheduler-binary "$SCHEDULER_BIN")
    [[ -n $scheduler_config ]] && args+=(--kube-scheduler-config "$scheduler_config")
  fi
  mkdir -p "$KWOK_WORKDIR"
  if ! kwokctl "${args[@]}" >"$KWOK_WORKDIR/$CLUSTER_NAME.create.log" 2>&1; then
    cat "$KWOK_WORKDIR/$CLUSTER_NAME.create.log" >&2
    die "kwokctl create cluster failed (log above; component logs: $KWOKCTL_BIN --name $CLUSTER_NAME logs <component>)"
  fi
  echo "$spec" >"$SPEC_FILE"
  info "control plane up in $(since "$start")"
fi

if [[ ${FAKE_NODES:-1} != 0 ]]; then
  log "fake nodes"
  "$DEMO_BIN" nodes --kubeconfig "$KUBECONFIG_OUT"
fi
log "cluster $CLUSTER_NAME ready in $(since "$start"): export KUBECONFIG=$KUBECONFIG_OUT"
echo "$KUBECONFIG_OUT"
