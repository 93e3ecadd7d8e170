#!/usr/bin/env bash
# Runs every Go fuzz target of archfilter, one after the other (make fuzz), or each briefly
# (make test's test-fuzz stage, --smoke), and with --doc writes the "Bad input" table of
# docs/reliability.md from the run (hack/fuzz/fuzzreport).
#
#   hack/fuzz/fuzz.sh [--smoke] [--doc]
#   hack/fuzz/fuzz.sh --report=RESULTS[,RESULTS...]   the table from earlier runs' results.tsv
#
# Settings (environment):
#   FUZZTIME      how long each target runs: a duration (5m, the default; --smoke: 5s)
#                 or Nx executions, as go test -fuzztime takes it
#   FUZZ_TARGETS  a regular expression: only the targets whose name it matches, unanchored
#                 as go test -run's (FuzzFind|FuzzIdentify; ^FuzzParse$ for that one alone)
#   FUZZ_PARALLEL fuzzing processes per target (go test -parallel; default: every core
#                 divided among FUZZ_JOBS)
#   FUZZ_JOBS     targets fuzzed at the same time (1); FUZZ_JOBS=2 FUZZ_PARALLEL=1 halves
#                 the wall time of make fuzz on two cores for the same executions
#   FUZZ_MINIMIZE how long the fuzzer may shrink each new input (go test -fuzzminimizetime;
#                 10s: go's default of 60s spends most of a short run shrinking, uncounted)
#   FUZZ_OUT      where the logs and results.tsv go (.cache/fuzz/<UTC time>)
#
# The targets are found, not listed: every func Fuzz* in a _test.go file of the main
# module's packages. Their seeds (f.Add, and the corpus files under each package's
# testdata/fuzz/<target>/) run in every `go test` of the package, so the unit stage
# replays them; here the fuzzer mutates them. A failure leaves its input under
# testdata/fuzz/<target>/ (go test writes it there): fix the code, keep the input (it is a
# seed from then on), and commit both. The script runs every target even after one
# fails, then exits 1 naming the inputs.
set -euo pipefail

SMOKE=false
DOC=false
REPORT=
for arg; do
  case $arg in
    --report=*) REPORT=${arg#--report=} ;;
    --smoke) SMOKE=true ;;
    --doc) DOC=true ;;
    *) echo "usage: hack/fuzz/fuzz.sh [--smoke] [--doc] | --report=RESULTS[,RESULTS...]" >&2; exit 2 ;;
  esac
done

# lib.sh: ROOT, ARCHFILTER_CACHE, NICE, log, die
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"
cd "$ROOT"

if [[ -n $REPORT ]]; then
  go run ./hack/fuzz/fuzzreport -results "$REPORT" -targets hack/fuzz/targets.tsv -doc docs/reliability.md
  log "docs/reliability.md: the bad-input table from $REPORT"
  exit 0
fi

if $SMOKE; then
  FUZZTIME=${FUZZTIME:-5s}
else
  FUZZTIME=${FUZZTIME:-5m}
fi
FUZZ_TARGETS=${FUZZ_TARGETS:-.}
FUZZ_JOBS=${FUZZ_JOBS:-1}
FUZZ_MINIMIZE=${FUZZ_MINIMIZE:-10s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-$(( $(nproc) / FUZZ_JOBS > 0 ? $(nproc) / FUZZ_JOBS : 1 ))}
FUZZ_OUT=${FUZZ_OUT:-$ARCHFILTER_CACHE/fuzz/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$FUZZ_OUT"
RESULTS=$FUZZ_OUT/results.tsv

# Every fuzz target as "package-dir<TAB>name", sorted. The main module's packages only:
# test/ holds suites of their own modules' shape, hack/ tools.
mapfile -t TARGETS < <(
  grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*(' apis cmd internal pkg |
    sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1\t\2#' |
    awk -F'\t' -v re="$FUZZ_TARGETS" '$2 ~ re' | sort -u
)
((${#TARGETS[@]})) || die "no fuzz target matches FUZZ_TARGETS=$FUZZ_TARGETS"

log "${#TARGETS[@]} fuzz target(s), $FUZZTIME each, $FUZZ_JOBS at a time, $FUZZ_PARALLEL process(es) each; logs in $FUZZ_OUT"
{
  printf '# fuzztime=%s parallel=%s jobs=%s commit=%s go=%s date=%s\n' "$FUZZTIME" "$FUZZ_PARALLEL" "$FUZZ_JOBS" \
    "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- apis cmd internal pkg || echo -dirty)" \
    "$(go env GOVERSION)" "$(date -u '+%Y-%m-%d %H:%M UTC')"
  printf 'package\ttarget\tseconds\texecs\tresult\tinput\n'
} >"$RESULTS"

# fuzz_one DIR NAME: one target; writes its results row to $FUZZ_OUT/rows/DIR.NAME.
fuzz_one() {
  local dir=$1 name=$2 id=${1//\//_}.$2
  local logfile=$FUZZ_OUT/$id.log start result=ok secs execs input
  start=$(date +%s)
  # -run '^$': only the fuzzer (the package's tests ran in the unit stage).
  # shellcheck disable=SC2086 # GOTESTVET is empty or one flag
  if ! $NICE go test ${GOTESTVET:-} -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" \
    -fuzzminimizetime "$FUZZ_MINIMIZE" -parallel "$FUZZ_PARALLEL" "./$dir" >"$logfile" 2>&1; then
    result=FAIL
  fi
  secs=$(($(date +%s) - start))
  # The fuzzer's last progress line: "fuzz: elapsed: 5m0s, execs: 123456 (411/sec), ...".
  execs=$(sed -n 's/^fuzz: elapsed: [^,]*, execs: \([0-9]*\).*/\1/p' "$logfile" | tail -1)
  input=$(sed -n 's/^ *Failing input written to \(.*\)$/\1/p' "$logfile" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$dir" "$name" "$secs" "${execs:-0}" "$result" \
    "${input:+$dir/$input}" >"$FUZZ_OUT/rows/$id"
  if [[ $result == ok ]]; then
    info "$(printf '%-32s %-24s %12s execs  %4ss' "$dir" "$name" "${execs:-0}" "$secs")"
  else
    warn "$dir $name failed (${input:+input $dir/$input, }log $logfile):"
    grep -v '^fuzz: elapsed' "$logfile" | head -30 >&2 || true
  fi
}

mkdir -p "$FUZZ_OUT/rows"
for row in "${TARGETS[@]}"; do
  while (($(jobs -rp | wc -l) >= FUZZ_JOBS)); do wait -n || true; done
  fuzz_one "${row%%$'\t'*}" "${row##*$'\t'}" &
done
wait

FAILED=()
for row in "${TARGETS[@]}"; do
  id=${row%%$'\t'*}
  id=${id//\//_}.${row##*$'\t'}
  IFS=$'\t' read -r dir name _ _ result input <"$FUZZ_OUT/rows/$id"
  cat "$FUZZ_OUT/rows/$id" >>"$RESULTS"
  [[ $result == ok ]] || FAILED+=("$dir $name: ${input:+input $input; }log $FUZZ_OUT/$id.log")
done

if $DOC; then
  go run ./hack/fuzz/fuzzreport -results "$RESULTS" -targets hack/fuzz/targets.tsv -doc docs/reliability.md
  log "docs/reliability.md: the bad-input table from $RESULTS"
fi

if ((${#FAILED[@]})); then
  printf '\033[1;31merror:\033[0m %d fuzz target(s) failed; fix the code, keep each input as a seed:\n' "${#FAILED[@]}" >&2
  printf '    %s\n' "${FAILED[@]}" >&2
  exit 1
fi
log "every target ran $FUZZTIME without a failure ($RESULTS)"
