#!/usr/bin/env bash
# Runs archfilter's benchmarks and writes docs/benchmarks.md (make bench), or the
# CI-sized smoke (make bench-smoke, --smoke), or writes docs/benchmarks.md from earlier
# runs without running a benchmark (make bench-report, --report).
#
#   hack/bench/bench.sh                      BENCH_SCALE=small (default) or full
#   hack/bench/bench.sh --smoke              gross regressions only; never a wall-clock threshold
#   hack/bench/bench.sh --report DIR [DIR…]  the document from these run directories (BENCH_OUT
#                                            of earlier runs): each comparison from one run, the
#                                            largest scale's that has both sides (test/perf/report)
#
# Settings (environment):
#   BENCH_SCALE        small: 500 nodes, 2 000 pods per workload; full: 5 000 / 10 000
#   BENCH_ROUNDS       times every scheduler_perf workload runs, in turn (small and full: 5)
#   BENCH_MICRO_COUNT  -count of the micro-benchmarks, and the rounds of the scheduling
#                      cycle's (test/perf/cycle) (6); 0 leaves both out
#   BENCH_LABELS       more scheduler_perf labels a test case must have (or, with a leading
#                      -, must not have; test/perf/config/performance-config.yaml lists
#                      them), e.g. pairs (the summary's throughput pairs) or -pairs (the
#                      rest): a full-scale run of every workload takes about 40 minutes a
#                      round on 2 cores, so the parts can run separately and
#                      make bench-report combines them
#   BENCH_CURVE        node counts of the scheduling cycle's cost curve (test/perf/cycle's
#                      BenchmarkSchedulingCycleNodes), e.g. 1000,5000,15000, and with it the
#                      scheduler's memory with 10 000 and 100 000 distinct images cached
#                      (BenchmarkSchedulerMemory); empty (the default) leaves both out:
#                      building 15 000 nodes takes a minute a round
#   BENCH_CURVE_ROUNDS rounds of the curve, every other one in reverse order (3)
#   BENCH_PERF        false: micro-benchmarks and the scheduling cycle only, no scheduler_perf
#                      (make bench-report then takes the workloads from other runs)
#   BENCH_OUT          where raw outputs go (.cache/bench/<scale>-<UTC time>), run.env among
#                      them: the settings above and the commit, for --report
#   BENCH_DOC          the document written (docs/benchmarks.md)
#   GOTESTVET          -vet=off under make test, whose verify stage vets every package
#
# Needs Go and the Go module proxy only: etcd (scheduler_perf starts it from PATH) and
# benchstat are built once into the tools cache by hack/cluster/tools.sh.
set -euo pipefail

SMOKE=false
REPORT_ONLY=false
case ${1:-} in
  --smoke) SMOKE=true ;;
  --report)
    REPORT_ONLY=true
    shift
    ;;
esac

# lib.sh: ROOT, ARCHFILTER_CACHE, KUBE_VERSION, ETCD_VERSION, NICE, log, die…
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

# Run directories given to --report, made absolute before the cd below.
RUNS=()
if $REPORT_ONLY; then
  (($#)) || die "usage: hack/bench/bench.sh --report RUN_DIR... (make bench-report BENCH_RUNS=\"dir1 dir2\")"
  for dir in "$@"; do
    [[ -d $dir ]] || die "--report: no run directory $dir"
    RUNS+=("$(cd "$dir" && pwd)")
  done
fi
cd "$ROOT"
BENCH_DOC=${BENCH_DOC:-$ROOT/docs/benchmarks.md}

# --- report ---------------------------------------------------------------------------------
# write_doc RUN_DIR...: BENCH_DOC from the raw outputs of run directories (this run's, or
# --report's), and the summary on stdout. test/perf/report reads each directory and
# picks the run of every row; it writes nothing into them.
write_doc() {
  $NICE go run ./test/perf/report -out "$BENCH_DOC" "$@"
  log "wrote ${BENCH_DOC#"$ROOT"/} from ${*#"$ROOT"/}"
}

if $REPORT_ONLY; then
  write_doc "${RUNS[@]}"
  exit 0
fi

if $SMOKE; then
  BENCH_SCALE=smoke
  BENCH_ROUNDS=1
  BENCH_MICRO_COUNT=1
fi
BENCH_SCALE=${BENCH_SCALE:-small}
case $BENCH_SCALE in
  smoke) ;;
  small) BENCH_ROUNDS=${BENCH_ROUNDS:-5} ;;
  full) BENCH_ROUNDS=${BENCH_ROUNDS:-5} ;;
  *) die "BENCH_SCALE must be small or full, not $BENCH_SCALE" ;;
esac
BENCH_MICRO_COUNT=${BENCH_MICRO_COUNT:-6}
BENCH_OUT=${BENCH_OUT:-$ARCHFILTER_CACHE/bench/$BENCH_SCALE-$(date -u +%Y%m%dT%H%M%SZ)}

# The commit measured, "-dirty" when the tree differs from it (untracked files count,
# as in go build's vcs.modified): read before BENCH_OUT, which may be in the tree, exists.
COMMIT=$(git rev-parse --short HEAD 2>/dev/null) || COMMIT=unknown
if [[ $COMMIT != unknown && -n $(git status --porcelain 2>/dev/null) ]]; then
  COMMIT+=-dirty
fi
mkdir -p "$BENCH_OUT"
# What the report needs besides the results, written first so an unfinished run says it too.
{
  printf 'BENCH_SCALE=%s\n' "$BENCH_SCALE"
  printf 'BENCH_LABELS=%s\n' "${BENCH_LABELS:-}"
  printf 'BENCH_PERF=%s\n' "${BENCH_PERF:-true}"
  printf 'BENCH_ROUNDS=%s\n' "$BENCH_ROUNDS"
  printf 'BENCH_MICRO_COUNT=%s\n' "$BENCH_MICRO_COUNT"
  printf 'BENCH_CURVE=%s\n' "${BENCH_CURVE:-}"
  printf 'BENCH_COMMIT=%s\n' "$COMMIT"
} >"$BENCH_OUT/run.env"

# make test's -vet=off (GOTESTVET), as one word or none.
VET=()
[[ -z ${GOTESTVET:-} ]] || VET=("$GOTESTVET")

START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# --- tools -------------------------------------------------------------------------------
if $SMOKE; then
  "$ROOT/hack/cluster/tools.sh" etcd
else
  "$ROOT/hack/cluster/tools.sh" etcd benchstat
fi
eval "$("$ROOT/hack/cluster/tools.sh" --print etcd benchstat)"
PATH="$(dirname "$ETCD_BIN"):$PATH"
export PATH
BENCHSTAT=$BENCHSTAT_BIN

# scheduler_perf needs github.com/stretchr/testify in go.mod, which `go mod tidy` adds
# once test/perf is in the tree. Until then, build test/perf with a copy of go.mod that
# has it, rather than editing the project's go.mod behind its back.
MODFLAG=()
if ! go list -test ./test/perf >/dev/null 2>&1; then
  mod=$BENCH_OUT/go.mod
  cp go.mod "$mod" && cp go.sum "${mod%.mod}.sum"
  go mod edit -modfile="$mod" -require=github.com/stretchr/testify@v1.11.1
  go list -modfile="$mod" -test ./test/perf >/dev/null \
    || die "test/perf does not build (see: go list -test ./test/perf)"
  warn "go.mod lacks github.com/stretchr/testify (needed by scheduler_perf): run go mod tidy; using $mod meanwhile"
  MODFLAG=(-modfile="$mod")
fi

# --- micro-benchmarks -----------------------------------------------------------------------
if $SMOKE; then
  MICRO_BENCH='^BenchmarkFilter$'
  MICRO_PKGS=(./pkg/plugins/archfilter/)
else
  MICRO_BENCH=.
  MICRO_PKGS=(./pkg/plugins/archfilter/ ./pkg/resolver/)
fi
# BENCH_MICRO_COUNT=0 leaves them and the scheduling cycle out: a run of scheduler_perf
# workloads alone, whose document make bench-report completes with other runs.
: >"$BENCH_OUT/micro.txt"
if ((BENCH_MICRO_COUNT > 0)); then
  log "micro-benchmarks (-count $BENCH_MICRO_COUNT): ${MICRO_PKGS[*]}"
  t=$(date +%s)
  if ! $NICE go test "${VET[@]}" -run '^$' -bench "$MICRO_BENCH" -benchmem -count "$BENCH_MICRO_COUNT" "${MICRO_PKGS[@]}" \
    >"$BENCH_OUT/micro.txt" 2>&1; then
    # The others still ran; the report lists the failures and leaves their rows empty.
    # bench-smoke's own gate (Filter's allocations) is checked by the report below.
    grep -E -- '^(--- FAIL|FAIL|panic:)|_test.go:[0-9]+:' "$BENCH_OUT/micro.txt" | head -n 20 >&2 || true
    grep -q '^Benchmark' "$BENCH_OUT/micro.txt" || die "micro-benchmarks did not run: $BENCH_OUT/micro.txt"
    warn "some micro-benchmarks failed (above); continuing"
  fi
  info "done in $(since "$t")"
else
  log "micro-benchmarks and the scheduling cycle left out (BENCH_MICRO_COUNT=0)"
fi

# --- scheduling cycle -------------------------------------------------------------------------
# test/perf/cycle's BenchmarkSchedulingCycle, once per round (every other one in reverse
# order) rather than with -count, which repeats each sub-benchmark back to back: so run i
# of each case ran next to run i of the others, and the report pairs them as it pairs
# scheduler_perf's rounds. Its results go to micro.txt with the micro-benchmarks'.
if ! $SMOKE && ((BENCH_MICRO_COUNT > 0)); then
  log "scheduling cycle (test/perf/cycle), $BENCH_MICRO_COUNT round(s)"
  t=$(date +%s)
  CYCLE_TEST=$BENCH_OUT/cycle.test
  $NICE go test "${VET[@]}" -c -o "$CYCLE_TEST" ./test/perf/cycle/ || die "test/perf/cycle does not build"
  for ((round = 1; round <= BENCH_MICRO_COUNT; round++)); do
    order=()
    ((round % 2)) || order=(-reverse)
    # In the package's directory, as go test runs it: the test reads the manifests by relative path.
    if ! (cd test/perf/cycle && $NICE "$CYCLE_TEST" -test.run '^$' -test.bench '^BenchmarkSchedulingCycle$' \
      -test.benchmem -test.count 1 "${order[@]}") >>"$BENCH_OUT/micro.txt" 2>&1; then
      warn "BenchmarkSchedulingCycle failed in round $round (see $BENCH_OUT/micro.txt); continuing"
    fi
  done
  # One more pass of the upstream workloads' ArchFilter cases under the CPU profiler: the
  # share of the process's CPU in ArchFilter's code (docs/benchmarks.md, the spread and
  # preemption rows), whatever the framework spends around it.
  if (cd test/perf/cycle && $NICE "$CYCLE_TEST" -test.run '^$' -test.bench '^BenchmarkSchedulingCycle$/^(spread|preempt)/archfilter$' \
    -test.benchtime 3s -test.cpuprofile "$BENCH_OUT/cycle.cpu.pprof") >"$BENCH_OUT/cycle-profile.log" 2>&1; then
    # ArchFilter's extension points (the report sets them against the timed cycles' CPU,
    # from the pass's output, and the process's).
    go tool pprof -top -nodecount=20 -focus='archfilter\.\(\*ArchFilter\)\.(PreFilter|Filter|PreScore|Score|NormalizeScore)$' \
      "$CYCLE_TEST" "$BENCH_OUT/cycle.cpu.pprof" >"$BENCH_OUT/cycle-profile-archfilter.txt" 2>/dev/null \
      || warn "go tool pprof failed on $BENCH_OUT/cycle.cpu.pprof"
  else
    warn "the profiled scheduling cycle failed (see $BENCH_OUT/cycle-profile.log); continuing"
  fi
  info "done in $(since "$t")"
fi

# --- scheduling cycle against cluster size -----------------------------------------------------
# BENCH_CURVE: BenchmarkSchedulingCycleNodes over clusters of those node counts, once per round
# as above, into micro.txt, where the report finds it (docs/benchmarks.md's curve section).
if ! $SMOKE && [[ -n ${BENCH_CURVE:-} ]]; then
  [[ $BENCH_CURVE =~ ^[0-9]+(,[0-9]+)*$ ]] || die "BENCH_CURVE must be node counts separated by commas, not $BENCH_CURVE"
  BENCH_CURVE_ROUNDS=${BENCH_CURVE_ROUNDS:-3}
  log "scheduling cycle against cluster size (nodes $BENCH_CURVE), $BENCH_CURVE_ROUNDS round(s)"
  t=$(date +%s)
  CYCLE_TEST=$BENCH_OUT/cycle.test
  [[ -x $CYCLE_TEST ]] || $NICE go test "${VET[@]}" -c -o "$CYCLE_TEST" ./test/perf/cycle/ || die "test/perf/cycle does not build"
  for ((round = 1; round <= BENCH_CURVE_ROUNDS; round++)); do
    order=()
    ((round % 2)) || order=(-reverse)
    if ! (cd test/perf/cycle && $NICE "$CYCLE_TEST" -test.run '^$' -test.bench '^BenchmarkSchedulingCycleNodes$' \
      -test.benchmem -test.count 1 -test.timeout 1h "${order[@]}" -nodes "$BENCH_CURVE") >>"$BENCH_OUT/micro.txt" 2>&1; then
      warn "BenchmarkSchedulingCycleNodes failed in round $round (see $BENCH_OUT/micro.txt); continuing"
    fi
  done
  # The scheduler's memory as its cache fills with 10 000 and 100 000 distinct images, once.
  if ! (cd test/perf/cycle && $NICE "$CYCLE_TEST" -test.run '^$' -test.bench '^BenchmarkSchedulerMemory$' \
    -test.benchtime 1x -test.timeout 30m) >>"$BENCH_OUT/micro.txt" 2>&1; then
    warn "BenchmarkSchedulerMemory failed (see $BENCH_OUT/micro.txt); continuing"
  fi
  info "done in $(since "$t")"
fi

# --- scheduler_perf -------------------------------------------------------------------------
# BENCH_PERF=false leaves it out: a run of the micro-benchmarks and the scheduling cycle
# alone, whose document make bench-report completes with other runs' workloads.
PERF_OK=true
: >"$BENCH_OUT/perf.txt"
if [[ ${BENCH_PERF:-true} == true ]]; then
  log "scheduler_perf workloads, BENCH_SCALE=$BENCH_SCALE, $BENCH_ROUNDS round(s)"
  t=$(date +%s)
  mkdir -p "$BENCH_OUT/logs" "$BENCH_OUT/items"
  # ARTIFACTS: scheduler_perf writes each workload's log there and keeps it only if it fails.
  # A CPU profile of the whole run, except in the smoke (docs/benchmarks.md, "Where the CPU goes").
  PROFILE=()
  $SMOKE || PROFILE=(-cpuprofile "$BENCH_OUT/perf.cpu.pprof" -o "$BENCH_OUT/perf.test")
  if ! ARTIFACTS="$BENCH_OUT/logs" $NICE go test "${VET[@]}" "${MODFLAG[@]}" ./test/perf/ -run '^$' "${PROFILE[@]}" \
    -bench BenchmarkPerfScheduling -benchtime=1x -count 1 -timeout 3h \
    -args -rounds "$BENCH_ROUNDS" -perf-scheduling-label-filter="$BENCH_SCALE${BENCH_LABELS:+,$BENCH_LABELS}" \
    -data-items-dir="$BENCH_OUT/items" >"$BENCH_OUT/perf.log" 2>&1; then
    PERF_OK=false
    grep -E -- '^(--- FAIL|FAIL|panic:)|FATAL|Error running|unexpected goroutines' "$BENCH_OUT/perf.log" | head -n 20 >&2 || true
    grep -q '^BenchmarkPerfScheduling/' "$BENCH_OUT/perf.log" \
      || die "no scheduler_perf workload completed: $BENCH_OUT/perf.log, logs in $BENCH_OUT/logs"
    warn "some scheduler_perf workloads failed (above): $BENCH_OUT/perf.log, logs in $BENCH_OUT/logs"
  fi
  # One name per workload across rounds, so benchstat and the report see repeated runs.
  grep -E -- '^(Benchmark|--- FAIL: Benchmark|goos|goarch|pkg|cpu)' "$BENCH_OUT/perf.log" \
    | grep -v '^BenchmarkPerfScheduling/round-[0-9]*-' \
    | sed -E 's#/round-[0-9]+(/|$)#\1#' >"$BENCH_OUT/perf.txt"
  info "done in $(since "$t")"
else
  log "scheduler_perf left out (BENCH_PERF=${BENCH_PERF})"
fi

if $SMOKE; then
  $PERF_OK || die "bench-smoke: scheduler_perf workloads failed"
  go run ./test/perf/report -smoke -scale smoke -micro "$BENCH_OUT/micro.txt" -perf "$BENCH_OUT/perf.txt"
  log "bench-smoke passed in $(since "$START") (outputs: $BENCH_OUT)"
  exit 0
fi

# --- this run's report inputs ---------------------------------------------------------------
[[ ! -s $BENCH_OUT/micro.txt ]] || "$BENCHSTAT" "$BENCH_OUT/micro.txt" >"$BENCH_OUT/micro.benchstat"
units='SchedulingThroughput/Average OR measured-pods/s OR created-pods/s OR all-bound-s OR extra-attempts'
units+=' OR held-pods OR fail-open OR released-timeout OR cold-req/image OR cold-manifest-req/image'
units+=' OR outage-req/image OR scheduler_framework_extension_point_duration_ms/Average OR runtime_seconds'
[[ ! -s $BENCH_OUT/perf.txt ]] || "$BENCHSTAT" -filter ".unit:($units)" "$BENCH_OUT/perf.txt" >"$BENCH_OUT/perf.benchstat"

WORKLOADS="every workload"
[[ -z ${BENCH_LABELS:-} ]] || WORKLOADS="the workloads of BENCH_LABELS=$BENCH_LABELS"
[[ ${BENCH_PERF:-true} == true ]] || WORKLOADS="no scheduler_perf workload (BENCH_PERF=false)"
{
  printf 'date\t%s\n' "$(date -u +'%Y-%m-%d %H:%M UTC')"
  printf 'scale\tBENCH_SCALE=%s, %s round(s) of %s, micro-benchmarks -count %s, scheduling cycle %s round(s)\n' \
    "$BENCH_SCALE" "$BENCH_ROUNDS" "$WORKLOADS" "$BENCH_MICRO_COUNT" "$BENCH_MICRO_COUNT"
  printf 'CPU\t%s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  printf 'cores (nproc)\t%s\n' "$(nproc)"
  printf 'memory\t%s GiB\n' "$(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo)"
  printf 'kernel\t%s\n' "$(uname -sr)"
  printf 'Go\t%s\n' "$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
  printf 'Kubernetes\t%s (scheduler_perf, in-process etcd %s and kube-apiserver)\n' "$KUBE_VERSION" "$ETCD_VERSION"
  printf 'load average at start / end\t%s / %s\n' "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf 'make bench took\t%s\n' "$(since "$START")"
} >"$BENCH_OUT/machine.txt"

if [[ -s $BENCH_OUT/perf.cpu.pprof ]]; then
  go tool pprof -top -cum -nodecount=30 "$BENCH_OUT/perf.test" "$BENCH_OUT/perf.cpu.pprof" \
    >"$BENCH_OUT/profile-top.txt" 2>/dev/null || warn "go tool pprof failed on $BENCH_OUT/perf.cpu.pprof"
  go tool pprof -top -cum -nodecount=30 -focus='archfilter/(pkg/plugins/archfilter|pkg/resolver)' \
    "$BENCH_OUT/perf.test" "$BENCH_OUT/perf.cpu.pprof" >"$BENCH_OUT/profile-archfilter.txt" 2>/dev/null || true
fi

write_doc "$BENCH_OUT"
log "make bench done in $(since "$START") (raw outputs: $BENCH_OUT)"
$PERF_OK || die "some scheduler_perf workloads failed; the document lists them"
