#!/usr/bin/env bash
# Installs the system packages the tests use, when missing: the CNCF
# Distribution registry (Debian's docker-registry), htpasswd for its auth, the
# CA bundle make image puts in the images, and promtool (Debian's prometheus).
set -o errexit -o nounset -o pipefail

need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
# make image installs the CA bundle in the images.
[[ -f /etc/ssl/certs/ca-certificates.crt ]] || need+=(ca-certificates)
# make test-chart checks and unit-tests the alerting rules with promtool.
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
[[ ${#need[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "missing ${need[*]}: install them (apt-get install ${need[*]}) or run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
