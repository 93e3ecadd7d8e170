# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this
# Shared settings and helpers for hack/cluster/*.sh. Source it; do not run it.
#
# What runs here keeps its state under $ARCHFILTER_CACHE (default <repo>/.cache,
# git-ignored): per-cluster state under the cluster name, registry data under
# registry/, helpers built from this clone's source under bin/. The tools
# built from the module proxy (etcd, kube-apiserver, kwok, ...) live in the
# per-user tools cache instead ($ARCHFILTER_TOOLS_CACHE, hack/lib/tools-cache.sh;
# hack/cluster/tools.sh --print names them).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=hack/lib/go.sh
source "$ROOT/hack/lib/go.sh"
export ARCHFILTER_CACHE=${ARCHFILTER_CACHE:-$ROOT/.cache}

# Versions of what we build. Kubernetes comes from go.mod so the control plane
# matches the scheduler; etcd is the release line k8s 1.37 is built against
# (3.7), at its newest patch (the in-process etcd of the tests is go.mod's).
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
# KUBE_VERSION is the API server's version: by default the main line's
# (go.mod); make e2e sets it per cell of the support matrix. KCM_VERSION is
# the kube-controller-manager's, by default the same (the skew policy lets it
# be one minor older than the API server, which saves a build per minor).
MAIN_KUBE_VERSION=$(cd "$ROOT" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
K8S135_KUBE_VERSION=$(cd "$ROOT" && go list -modfile=go.k8s1.35.mod -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_VERSION=${KUBE_VERSION:-$MAIN_KUBE_VERSION}
KCM_VERSION=${KCM_VERSION:-$KUBE_VERSION}

# Helpers built from this clone's source (hack/demo), rebuilt incrementally.
LOCAL_BIN=$ARCHFILTER_CACHE/bin
SCHEDULER_BIN=${ARCHFILTER_SCHEDULER_BINARY:-$ROOT/bin/archfilter-scheduler}

CLUSTER_NAME=${CLUSTER_NAME:-archfilter}
# kwokctl keeps its state in $KWOK_WORKDIR/clusters/<name>; keep it in the cache
# too so `make demo-down` / `rm -rf .cache` really removes everything.
export KWOK_WORKDIR=${KWOK_WORKDIR:-$ARCHFILTER_CACHE/kwok}
export KWOK_KUBE_VERSION=$KUBE_VERSION

# Builds are niced: this is a shared 2-core machine and a link takes ~2 GB.
NICE=${NICE:-nice -n 10}

log()  { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
info() { printf '    %s\n' "$*" >&2; }
warn() { printf '\033[1;33mwarning:\033[0m %s\n' "$*" >&2; }
die()  { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is required but not installed${2:+: $2}"
}

# since START: seconds elapsed since START (from `date +%s`), for progress lines.
since() { echo "$(( $(date +%s) - $1 ))s"; }

# shellcheck source=hack/lib/tools-cache.sh
source "$ROOT/hack/lib/tools-cache.sh"
