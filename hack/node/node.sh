#!/usr/bin/env bash
# A real linux node beside KWOK's fake ones: kubelet (built from the module
# graph at the control plane's version) on Debian's containerd and runc,
# joined to a local KWOK cluster (hack/cluster/up.sh), pulling from the local
# registry over TLS (hack/cluster/registry.sh with REGISTRY_TLS=1).
#
#   hack/node/node.sh up        everything up (idempotent: `down` first)
#   hack/node/node.sh down      every process stopped, every mount gone, state removed
#   hack/node/node.sh exec CMD  run CMD inside the run's network namespace
#   hack/node/node.sh env       settings as shell assignments
#   hack/node/node.sh kubectl   build kubectl (once, tools cache) and print its path
#
# Isolation: everything this starts (etcd, kube-apiserver, controller
# manager, scheduler, kwok, registries, containerd, kubelet, pods) runs in
# the network namespace $NETNS that `up` creates: a loopback, a veth pair
# (one end holds the node's address, $NODE_IP, the other leads nowhere) and a
# CNI bridge for pod addresses. Nothing connects it to the host's network:
# nothing started here can reach an address outside the namespace.
# containerd and kubelet also get a mount namespace of their own, with a
# tmpfs on /run/containerd: their mounts (overlay rootfs, pod volumes,
# network namespaces) never appear on the host and vanish with them.
# State: .cache/node/$CLUSTER_NAME; cgroups under /$NETNS.
# Needs root. Environment: CLUSTER_NAME (archfilter-node), NODE_NAME
# (real-linux-amd64), NODE_IP (10.213.0.1), REGISTRY_PORT (5021).
set -euo pipefail
export CLUSTER_NAME=${CLUSTER_NAME:-archfilter-node}
export REGISTRY_SET=${REGISTRY_SET:-node}
export REGISTRY_PORT=${REGISTRY_PORT:-5021}
export PRIVATE_REGISTRY_PORT=${PRIVATE_REGISTRY_PORT:-5022}
export REGISTRY_TLS=1
NODE_IP=${NODE_IP:-10.213.0.1}
# The registries listen on the node's address: containerd and pods reach it.
export REGISTRY_HOST=$NODE_IP
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

# Named after the checkout's cache, so two checkouts' runs never meet: `down`
# ends every process in the namespace.
NETNS=${NETNS:-af-node-$(sha256sum <<<"$ARCHFILTER_CACHE/$CLUSTER_NAME" | cut -c1-8)}
NODE_NAME=${NODE_NAME:-real-linux-amd64}
POD_SUBNET=${POD_SUBNET:-10.213.1.0/24}
DIR=$ARCHFILTER_CACHE/node/$CLUSTER_NAME
# kubelet and kubectl $KUBE_VERSION: built once into the tools cache by
# hack/cluster/tools.sh, like the control plane.
eval "$("$ROOT/hack/cluster/tools.sh" --print kubelet kubectl helm)"
KUBECONFIG_OUT=$ARCHFILTER_CACHE/$CLUSTER_NAME.kubeconfig
CGROUP_ROOT=/$NETNS
SOCK=$DIR/containerd/containerd.sock
PAUSE_IMAGE=$NODE_IP:$REGISTRY_PORT/archfilter-e2e/pause:v1
CNI_BIN_DIR=${CNI_BIN_DIR:-/usr/lib/cni}

in_netns() { nsenter --net="/run/netns/$NETNS" "$@"; }

print_env() {
  printf '%s\n' "NETNS=$NETNS" "NODE_NAME=$NODE_NAME" "NODE_IP=$NODE_IP" "KUBECONFIG=$KUBECONFIG_OUT" \
    "NODE_DIR=$DIR" "KUBECTL=$KUBECTL_BIN" "HELM=$HELM_BIN" "PAUSE_IMAGE=$PAUSE_IMAGE" "CONTAINERD_ADDRESS=$SOCK" "KUBE_VERSION=$KUBE_VERSION"
  "$ROOT/hack/cluster/registry.sh" env
}

# packages installs what the node needs from Debian, when missing.
packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [[ -x $CNI_BIN_DIR/bridge ]] || need+=(containernetworking-plugins)
  command -v nsenter >/dev/null || need+=(util-linux)
  command -v ip >/dev/null || need+=(iproute2)
  command -v openssl >/dev/null || need+=(openssl)
  command -v docker-registry >/dev/null || need+=(docker-registry)
  command -v htpasswd >/dev/null || need+=(apache2-utils)
  [[ ${#need[@]} -eq 0 ]] && return
  log "installing Debian packages: ${need[*]}"
  [[ $(id -u) -eq 0 ]] || die "missing ${need[*]}: run as root"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # No service starts: this machine has no systemd, and the node runs its own containerd.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

netns_up() {
  [[ -e /run/netns/$NETNS ]] && return
  ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  # The node's interface: one end of a veth pair whose other end, in the
  # same namespace, has no address and forwards nothing (forwarding is off in
  # a new namespace), so whatever is routed to it goes nowhere.
  ip -n "$NETNS" link add af-node0 type veth peer name af-sink0
  ip -n "$NETNS" addr add "$NODE_IP/24" dev af-node0
  ip -n "$NETNS" link set af-sink0 up
  ip -n "$NETNS" link set af-node0 up
  # kube-apiserver and kubelet want a default route to pick addresses.
  ip -n "$NETNS" route add default dev af-node0
  info "network namespace $NETNS: lo, af-node0 $NODE_IP/24 (default route into a veth that leads nowhere)"
}

write_configs() {
  local ca
  ca=$("$ROOT/hack/cluster/registry.sh" env | sed -n 's/^REGISTRY_CA=//p')
  mkdir -p "$DIR"/{containerd/certs.d,cni/net.d,kubelet,logs}
  cat >"$DIR/containerd/config.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
# Plugins that would write outside the run's directories or listen.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  # Built by the e2e test from a static Go program: nothing comes from registry.k8s.io.
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  # Processes here lack CAP_SYS_RESOURCE (check CapEff in /proc/self/status):
  # runc cannot lower a container's oom_score_adj below containerd's own
  # (kubelet asks -998 for sandboxes), so clamp it as rootless setups do.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$DIR/containerd/certs.d"
EOF
  # Every registry host containerd may pull from, with the CA that signed it.
  local host
  for host in "$NODE_IP:$REGISTRY_PORT" "$NODE_IP:$PRIVATE_REGISTRY_PORT"; do
    mkdir -p "$DIR/containerd/certs.d/$host"
    cp "$ca" "$DIR/containerd/certs.d/$host/ca.crt"
    cat >"$DIR/containerd/certs.d/$host/hosts.toml" <<EOF
server = "https://$host"

[host."https://$host"]
  capabilities = ["pull", "resolve"]
  ca = "$DIR/containerd/certs.d/$host/ca.crt"
EOF
  done
  # Pods that are not host-network get an address on a bridge inside the
  # run's network namespace; their gateway is the bridge, i.e. the namespace,
  # where the API server and the registries listen (no masquerade: nothing
  # is forwarded out of the namespace).
  cat >"$DIR/cni/net.d/10-archfilter.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "archfilter-node",
  "plugins": [
    {"type": "bridge", "bridge": "af-cni0", "isGateway": true, "ipMasq": false,
     "ipam": {"type": "host-local", "dataDir": "$DIR/cni/ipam", "ranges": [[{"subnet": "$POD_SUBNET"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
EOF
  cat >"$DIR/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
# This machine has cgroup v1 (hybrid): kubelet 1.35+ refuses it unless told.
failCgroupV1: false
# containerd 1.6 cannot report its cgroup driver (no RuntimeConfig RPC):
# kubelet falls back to this one, which is containerd's default (SystemdCgroup = false).
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# Only the run's own API server (inside the namespace) can reach this port;
# it does not present a client certificate.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDirectory: $DIR/kubelet/pod-logs
resolvConf: ""
serializeImagePulls: false
maxPods: 30
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
EOF
}

# supervisor runs inside the run's network namespace and a new mount
# namespace: containerd, then kubelet, both children of it.
supervisor() {
  mount -t tmpfs tmpfs /run/containerd
  containerd --config "$DIR/containerd/config.toml" >"$DIR/logs/containerd.log" 2>&1 &
  echo $! >"$DIR/containerd.pid"
  for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.1; done
  "$KUBELET_BIN" --config "$DIR/kubelet/config.yaml" --kubeconfig "$KUBECONFIG_OUT" \
    --root-dir "$DIR/kubelet/root" --cert-dir "$DIR/kubelet/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" \
    --node-labels "archfilter.io/e2e-real-node=true" -v 2 >"$DIR/logs/kubelet.log" 2>&1 &
  echo $! >"$DIR/kubelet.pid"
  wait
}

node_up() {
  local c
  for c in /sys/fs/cgroup/*/; do
    [[ -L ${c%/} ]] && continue
    mkdir -p "$c${CGROUP_ROOT#/}"
  done
  mkdir -p /run/containerd
  # setsid: the node outlives this script; unshare: a mount namespace of its
  # own whose mounts do not propagate back to the host.
  in_netns setsid unshare --mount --propagation slave -- "$0" __supervise >"$DIR/logs/supervisor.log" 2>&1 </dev/null &
  echo $! >"$DIR/supervisor.pid"
  local start
  start=$(date +%s)
  for _ in $(seq 600); do
    if in_netns "$KUBECTL_BIN" --kubeconfig "$KUBECONFIG_OUT" get node "$NODE_NAME" \
      -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; then
      info "node $NODE_NAME Ready in $(since "$start") (logs: $DIR/logs)"
      return
    fi
    [[ -f $DIR/kubelet.pid ]] && ! kill -0 "$(cat "$DIR/kubelet.pid")" 2>/dev/null && break
    sleep 0.5
  done
  tail -30 "$DIR/logs/kubelet.log" >&2 || true
  die "node $NODE_NAME not Ready (kubelet log: $DIR/logs/kubelet.log, containerd: $DIR/logs/containerd.log)"
}

# pids_of_run lists the processes that belong to this run: those whose
# network namespace is ours. Nothing else on the machine is in it.
pids_of_run() {
  [[ -e /run/netns/$NETNS ]] || return 0
  local want p
  want=$(stat -L -c %i "/run/netns/$NETNS")
  for p in /proc/[0-9]*; do
    [[ $(stat -L -c %i "$p/ns/net" 2>/dev/null) == "$want" ]] && echo "${p#/proc/}"
  done
  return 0
}

stop_pid_file() { # stop_pid_file FILE: SIGTERM, then SIGKILL after 15s
  local f=$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  stop_pid_file "$DIR/kubelet.pid"
  if [[ -f $DIR/containerd.pid ]] && kill -0 "$(cat "$DIR/containerd.pid")" 2>/dev/null; then
    # Stop every container (the shims exit with them) before containerd.
    local ctr_ns=(nsenter -t "$(cat "$DIR/containerd.pid")" -m -n ctr --address "$SOCK" -n k8s.io) t
    for t in $("${ctr_ns[@]}" tasks ls -q 2>/dev/null); do
      "${ctr_ns[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
    done
  fi
  stop_pid_file "$DIR/containerd.pid"
  "$ROOT/hack/cluster/down.sh" >/dev/null 2>&1 || true
  "$ROOT/hack/cluster/registry.sh" down >/dev/null 2>&1 || true
  # Whatever is left in the namespace was started by this run: shims,
  # container processes, the supervisor.
  local p left
  for p in $(pids_of_run); do kill -9 "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    left=$(pids_of_run)
    [[ -z $left ]] && break
    sleep 0.1
  done
  [[ -z $left ]] || die "processes still in network namespace $NETNS: $left"
  rm -f "$DIR/supervisor.pid"
  [[ -e /run/netns/$NETNS ]] && ip netns delete "$NETNS"
  # The cgroups kubelet made (empty now that their processes are gone).
  local c
  for c in /sys/fs/cgroup/*/"${CGROUP_ROOT#/}"; do
    [[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
    [[ -d $c ]] && warn "cgroup $c could not be removed"
  done
  # containerd's and kubelet's mounts lived in their own mount namespace;
  # check that none leaked to the host before deleting their directories.
  if grep -q " $DIR/" /proc/self/mountinfo; then
    grep " $DIR/" /proc/self/mountinfo >&2
    die "mounts under $DIR remain on the host"
  fi
  rm -rf "$DIR"
}

up() {
  local start
  start=$(date +%s)
  packages
  "$ROOT/hack/cluster/tools.sh" etcd kube-apiserver kube-controller-manager kwok scheduler kubelet kubectl helm
  down
  mkdir -p "$DIR/logs"
  netns_up
  in_netns "$ROOT/hack/cluster/registry.sh" up
  log "KWOK control plane $CLUSTER_NAME in network namespace $NETNS"
  # kwok manages only its fake nodes (the annotation test/e2e's fake nodes
  # carry), not the real one; the API server reaches the kubelet by its
  # address (there is no DNS in the namespace). There is no kube-proxy either:
  # the API server calls webhook Services (the placement mode's) at their
  # endpoints' pod addresses, on the node's bridge in this same namespace,
  # not at their ClusterIP (enable-aggregator-routing). The components
  # alternate: kwokctl v0.8.0 files a component's second argument under the
  # position of its first in this list, so each component's first argument
  # must come at its own position among the components (else it panics).
  KWOK_EXTRA_ARGS="kwok-controller=manage-all-nodes=false kube-apiserver=kubelet-preferred-address-types=InternalIP kwok-controller=manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake kube-apiserver=enable-aggregator-routing=true" \
    in_netns "$ROOT/hack/cluster/up.sh" >/dev/null
  write_configs
  log "real node $NODE_NAME: kubelet $KUBE_VERSION, $(containerd --version | awk '{print "containerd", $3}'), $(runc --version | head -1)"
  node_up
  log "real node up in $(since "$start")"
}

case ${1:-} in
  up) up ;;
  down) down; log "node $NODE_NAME, cluster $CLUSTER_NAME and network namespace $NETNS removed" ;;
  exec) shift; in_netns "$@" ;;
  env) print_env ;;
  kubectl) "$ROOT/hack/cluster/tools.sh" kubectl; echo "$KUBECTL_BIN" ;;
  __supervise) supervisor ;;
  *) die "usage: $0 up|down|exec CMD...|env" ;;
esac
