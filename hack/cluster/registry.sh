#!/usr/bin/env bash
# Runs two local CNCF Distribution registries (Debian's docker-registry), by
# default on the loopback interface, with filesystem storage under .cache/registry/$REGISTRY_SET/
# (REGISTRY_SET: demo by default; the e2e suite uses its own set and ports):
#   public   $REGISTRY_HOST:$REGISTRY_PORT          (default 5001), anonymous
#   private  $REGISTRY_HOST:$PRIVATE_REGISTRY_PORT  (default 5002), htpasswd auth
#            user $PRIVATE_REGISTRY_USER / $PRIVATE_REGISTRY_PASSWORD
# Distribution's auth covers a whole registry, hence two of them.
# REGISTRY_HOST (default 127.0.0.1) is the address they listen on (a real
# node's pods reach them on the node's address). REGISTRY_TLS=1 serves both
# over HTTPS with a certificate for REGISTRY_HOST signed by a CA of their
# own (.cache/registry/$REGISTRY_SET/tls/ca.crt, printed by `env` as
# REGISTRY_CA), as real nodes' container runtimes want.
#
# Usage: hack/cluster/registry.sh up|down|stop|status|env
#   up      start both (or keep them if already serving); installs the Debian
#           packages docker-registry and apache2-utils when missing (root)
#   stop    stop both, keeping their storage (`up` brings the same images back)
#   down    stop both and delete their storage
#   env     print the settings as shell assignments
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REGISTRY_DIR=$ARCHFILTER_CACHE/registry/${REGISTRY_SET:-demo}
REGISTRY_PORT=${REGISTRY_PORT:-5001}
PRIVATE_REGISTRY_PORT=${PRIVATE_REGISTRY_PORT:-5002}
PRIVATE_REGISTRY_USER=${PRIVATE_REGISTRY_USER:-demo}
PRIVATE_REGISTRY_PASSWORD=${PRIVATE_REGISTRY_PASSWORD:-archfilter-demo}
REGISTRY_HOST=${REGISTRY_HOST:-127.0.0.1}
REGISTRY_TLS=${REGISTRY_TLS:-}
TLS_DIR=$REGISTRY_DIR/tls
SCHEME=http
[[ -n $REGISTRY_TLS ]] && SCHEME=https

# tls_certs writes (once) a CA and the registries' serving certificate.
tls_certs() {
  [[ -f $TLS_DIR/registry.crt ]] && grep -q "IP:$REGISTRY_HOST$" "$TLS_DIR/ext.cnf" 2>/dev/null && return
  need_cmd openssl "apt-get install openssl"
  mkdir -p "$TLS_DIR"
  (
    cd "$TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 -subj "/CN=archfilter local registry CA" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$REGISTRY_HOST" \
      -keyout registry.key -out registry.csr 2>/dev/null
    printf 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:%s\n' "$REGISTRY_HOST" >ext.cnf
    openssl x509 -req -in registry.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile ext.cnf \
      -out registry.crt 2>/dev/null
  ) || die "generating the registry's TLS certificates in $TLS_DIR failed"
}

status_code() { # status_code PORT [USER:PASS] -> HTTP status of GET /v2/, 000 if down
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 ${2:+-u "$2"} ${REGISTRY_TLS:+--cacert "$TLS_DIR/ca.crt"} \
    "$SCHEME://$REGISTRY_HOST:$1/v2/" || true
}

start_one() { # start_one NAME PORT [htpasswd]
  local name=$1 port=$2 auth=${3:-} dir=$REGISTRY_DIR/$1 pid code
  code=$(status_code "$port")
  if [[ $code == 200 || $code == 401 ]]; then
    if [[ -f $dir/pid ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      info "$name registry already serving on $REGISTRY_HOST:$port"
      return
    fi
    die "$REGISTRY_HOST:$port answers /v2/ but is not our $name registry: stop it or pick other ports (REGISTRY_PORT, PRIVATE_REGISTRY_PORT)"
  fi
  mkdir -p "$dir/data"
  {
    echo "version: 0.1"
    echo "log: {level: warn, accesslog: {disabled: true}}"
    echo "storage: {filesystem: {rootdirectory: $dir/data}, delete: {enabled: true}}"
    if [[ -n $REGISTRY_TLS ]]; then
      echo "http: {addr: $REGISTRY_HOST:$port, secret: archfilter-demo, tls: {certificate: $TLS_DIR/registry.crt, key: $TLS_DIR/registry.key}}"
    else
      echo "http: {addr: $REGISTRY_HOST:$port, secret: archfilter-demo}"
    fi
    if [[ -n $auth ]]; then
      echo "auth: {htpasswd: {realm: archfilter-demo, path: $dir/htpasswd}}"
    fi
  } >"$dir/config.yml"
  if [[ -n $auth ]]; then
    # bcrypt cost 5 (the minimum htpasswd accepts): the registry checks it on every request.
    htpasswd -Bbn -C 5 "$PRIVATE_REGISTRY_USER" "$PRIVATE_REGISTRY_PASSWORD" >"$dir/htpasswd" 2>/dev/null
  fi
  # setsid: the registry must outlive this script and `make`.
  setsid docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/pid"
  for _ in $(seq 100); do
    code=$(status_code "$port")
    if [[ $code == 200 || $code == 401 ]]; then
      info "$name registry serving on $REGISTRY_HOST:$port (pid $pid, log $dir/log)"
      return
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$dir/log" >&2; die "$name registry exited (log above)"; }
    sleep 0.1
  done
  die "$name registry did not answer on $REGISTRY_HOST:$port within 10s (log: $dir/log)"
}

stop_one() { # stop_one NAME [keep]
  local name=$1 dir=$REGISTRY_DIR/$1 pid
  if [[ -f $dir/pid ]]; then
    pid=$(cat "$dir/pid")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      info "$name registry stopped (pid $pid)"
    fi
  fi
  rm -f "$dir/pid"
  [[ ${2:-} == keep ]] || rm -rf "$dir"
}

print_env() {
  printf '%s\n' "REGISTRY=$REGISTRY_HOST:$REGISTRY_PORT" "PRIVATE_REGISTRY=$REGISTRY_HOST:$PRIVATE_REGISTRY_PORT" \
    "PRIVATE_REGISTRY_USER=$PRIVATE_REGISTRY_USER" "PRIVATE_REGISTRY_PASSWORD=$PRIVATE_REGISTRY_PASSWORD"
  [[ -z $REGISTRY_TLS ]] || echo "REGISTRY_CA=$TLS_DIR/ca.crt"
}

case ${1:-up} in
  up)
    need_cmd curl "apt-get install curl"
    if ! command -v docker-registry >/dev/null 2>&1 || ! command -v htpasswd >/dev/null 2>&1; then
      log "installing docker-registry and apache2-utils (Debian packages)"
      "$ROOT/hack/install-test-deps.sh"
    fi
    log "local registries${REGISTRY_TLS:+ (TLS)}"
    [[ -z $REGISTRY_TLS ]] || tls_certs
    start_one public "$REGISTRY_PORT"
    start_one private "$PRIVATE_REGISTRY_PORT" htpasswd
    ;;
  down)
    stop_one public
    stop_one private
    rm -rf "$TLS_DIR"
    ;;
  stop)
    stop_one public keep
    stop_one private keep
    ;;
  status)
    echo "public  $REGISTRY_HOST:$REGISTRY_PORT: HTTP $(status_code "$REGISTRY_PORT")"
    echo "private $REGISTRY_HOST:$PRIVATE_REGISTRY_PORT: HTTP $(status_code "$PRIVATE_REGISTRY_PORT" "$PRIVATE_REGISTRY_USER:$PRIVATE_REGISTRY_PASSWORD")"
    ;;
  env) print_env ;;
  *) die "usage: $0 up|down|stop|status|env" ;;
esac
