#!/usr/bin/env bash
# Runs the e2e suite (test/e2e, KWOK provider) once per cell of the support
# matrix: one flavour's scheduler binary against a KWOK cluster whose
# kube-apiserver is a minor that flavour supports (kube-scheduler may be one
# minor older than the API server, never newer). Each cell brings its cluster
# and registries up and down (hack/cluster/up.sh through test/e2e's provider).
#
#   hack/cluster/e2e-matrix.sh CELL...     CELL = FLAVOUR:APISERVER:KCM
#   e.g. hack/cluster/e2e-matrix.sh main:v1.38.0-beta.0:v1.37.2 k8s1.35:v1.36.5:v1.35.8
#
# FLAVOUR is main (bin/archfilter-scheduler, go.mod) or k8s1.35
# (bin/archfilter-scheduler-k8s1.35, go.k8s1.35.mod); the e2e test binary is
# built from the flavour's module file too. APISERVER and KCM are the
# versions of kube-apiserver and kube-controller-manager (built once by
# tools.sh). Prints one line per cell at the end, also written to
# .cache/e2e/matrix.txt; exits non-zero when any cell failed.
# Environment: E2E_TIMEOUT (per cell, default 30m), GOTESTFLAGS, GOTESTVET (make test:
# -vet=off; its verify stage vets every package).
set -uo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -gt 0 ]] || die "usage: $0 FLAVOUR:APISERVER:KCM..."
out_dir=$ARCHFILTER_CACHE/e2e
mkdir -p "$out_dir"
summary=()
failed=0
for cell in "$@"; do
  IFS=: read -r flavour apiserver kcm <<<"$cell"
  case $flavour in
    main) bin=$ROOT/bin/archfilter-scheduler; goflags=() ;;
    k8s1.35) bin=$ROOT/bin/archfilter-scheduler-k8s1.35; goflags=(-modfile=go.k8s1.35.mod -tags=k8s1.35) ;;
    *) die "cell $cell: unknown flavour $flavour (main or k8s1.35)" ;;
  esac
  [[ -x $bin ]] || die "cell $cell: $bin is missing (make build)"
  [[ -n $apiserver && -n $kcm ]] || die "cell $cell: want FLAVOUR:APISERVER:KCM"
  scheduler=$("$bin" --version | awk '$1 == "Kubernetes" {print $2}')
  # Kubernetes' gang scheduling (test/e2e's TestArchFilterGang on the main
  # line) reads scheduling.k8s.io/v1beta1 PodGroups from 1.37: a beta API, off
  # by default (GenericWorkload), which the main line's API servers enable.
  # The k8s1.35 flavour's gang test uses scheduler-plugins' Coscheduling.
  extra=
  if [[ $flavour == main ]]; then
    extra="kube-apiserver=feature-gates=GenericWorkload=true kube-apiserver=runtime-config=scheduling.k8s.io/v1beta1=true"
  fi
  log_file=$out_dir/$flavour-apiserver-$apiserver.log
  log "e2e cell: $flavour scheduler $scheduler, kube-apiserver $apiserver, kube-controller-manager $kcm (log $log_file)"
  start=$(date +%s)
  # Under make test, each cell is a row of the stage table (hack/stage.sh).
  # shellcheck disable=SC2086 # GOTESTFLAGS is a list of flags
  (cd "$ROOT" && E2E_PROVIDER=kwok ARCHFILTER_SCHEDULER_BINARY=$bin KUBE_VERSION=$apiserver KCM_VERSION=$kcm KWOK_EXTRA_ARGS=$extra \
    hack/stage.sh run "$flavour x apiserver $apiserver" -- \
    go test "${goflags[@]}" ${GOTESTVET:-} ${GOTESTFLAGS:-} -count=1 -timeout "${E2E_TIMEOUT:-30m}" -v ./test/e2e/... 2>&1 | tee "$log_file")
  rc=$?
  result=passed
  if [[ $rc -ne 0 ]]; then
    result=FAILED
    failed=1
  fi
  tests=$(grep -c '^--- PASS: ' "$log_file")
  summary+=("$(printf '%-8s  scheduler %-8s  kube-apiserver %-8s  kube-controller-manager %-8s  %-6s  %3d top-level tests passed  %4ss' \
    "$flavour" "$scheduler" "$apiserver" "$kcm" "$result" "$tests" "$(($(date +%s) - start))")")
done

printf '%s\n' "${summary[@]}" >"$out_dir/matrix.txt"
log "e2e support matrix (also in $out_dir/matrix.txt):"
printf '    %s\n' "${summary[@]}" >&2
exit $failed
