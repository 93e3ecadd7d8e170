#!/usr/bin/env bash
# What each stage of `make test` cost. make test runs
#
#   hack/stage.sh all STAGE... [-- MAKEVAR=VALUE...]
#
# which runs `make STAGE` for every STAGE in turn (all of them, even after one
# fails), records each one's wall time, CPU, result and whether its tools came
# from the tools cache or were built, and prints the table at the end, also
# when a stage failed (then it exits 1). Inside a stage, scripts split their
# work into rows of their own (make e2e: one row per cell of the matrix):
#
#   hack/stage.sh run NAME -- CMD...   CMD as a row under the running stage
#                                      (outside make test it just runs CMD)
#   hack/stage.sh summary              the table of the last run again
#
# The rows are in $ARCHFILTER_CACHE/stages.tsv (default .cache/), the table
# in stages.txt beside it. Tools builders (hack/lib/tools-cache.sh) append
# "cached|built LABEL SECONDS" lines to $ARCHFILTER_STAGE_TOOLS, which `run`
# points at a file of the stage's own.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ARCHFILTER_CACHE:-$ROOT/.cache}
TABLE=$CACHE/stages.tsv

# Whole-machine busy CPU ticks (user, nice, system, irq, softirq, steal): what
# the machine did meanwhile, this run or not (the others on a shared machine).
machine_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
# child_ticks PID: CPU ticks of PID's waited-for descendants (cutime + cstime).
child_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $14 + $15}'; }
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)

duration() { # duration SECONDS: 1h02m03s, 4m05s, 6s
  local s=$1
  if ((s >= 3600)); then
    printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
  elif ((s >= 60)); then
    printf '%dm%02ds' $((s / 60)) $((s % 60))
  else
    printf '%ds' "$s"
  fi
}

# tools_summary FILE: "-", "cached (5)", or "built: etcd v3.6.4 (41s), ...;
# waited for: kwok v0.8.0 (1m02s); cached: 3" (waited: built meanwhile by
# another builder, make test's tools-ahead).
tools_summary() {
  local file=$1
  [[ -s $file ]] || { echo -; return; }
  awk -F'\t' '
    function d(s) { return (s >= 60) ? sprintf("%dm%02ds", s / 60, s % 60) : s "s" }
    { if (!($2 in kind)) { order[++n] = $2; kind[$2] = $1; secs[$2] = $3 }
      else if ($1 == "built" || ($1 == "waited" && kind[$2] == "cached")) { kind[$2] = $1; secs[$2] = $3 } }
    END {
      nb = nw = nc = 0; b = w = ""
      for (i = 1; i <= n; i++) {
        l = order[i]
        if (kind[l] == "built") b = b (nb++ ? ", " : "") l " (" d(secs[l]) ")"
        else if (kind[l] == "waited") w = w (nw++ ? ", " : "") l " (" d(secs[l]) ")"
        else nc++
      }
      if (nb == 0 && nw == 0) { printf "cached (%d)\n", nc; exit }
      sep = ""
      if (nb) { printf "built: %s", b; sep = "; " }
      if (nw) { printf "%swaited for: %s", sep, w; sep = "; " }
      if (nc) printf "%scached: %d", sep, nc
      printf "\n"
    }' "$file"
}

# run NAME -- CMD...: CMD as a stage (depth 0, from `all`) or a row under the
# running stage (depth 1).
run() {
  local name=$1
  shift
  [[ ${1:-} == -- ]] && shift
  if [[ -z ${ARCHFILTER_STAGE_TABLE:-} ]]; then
    "$@"
    return
  fi
  local depth=${STAGE_DEPTH:-0} parent=${ARCHFILTER_STAGE:-} parent_tools=${ARCHFILTER_STAGE_TOOLS:-}
  [[ -n $parent ]] && depth=1
  local tools start m0 rc=0
  tools=$(mktemp "$CACHE/stage-tools.XXXXXX")
  start=$(date +%s)
  m0=$(machine_ticks)
  # In a subshell of its own, whose waited-for children are the stage's
  # processes only (not make tools-ahead, whose end this shell may reap meanwhile).
  (
    self=$BASHPID
    c0=$(child_ticks "$self")
    ARCHFILTER_STAGE=$name ARCHFILTER_STAGE_TOOLS=$tools "$@"
    rc=$?
    echo $(($(child_ticks "$self") - c0)) >"$tools.cpu"
    exit "$rc"
  ) || rc=$?
  local wall=$(($(date +%s) - start))
  local cpu=$(($(cat "$tools.cpu" 2>/dev/null || echo 0) / HZ)) machine=$((($(machine_ticks) - m0) / HZ))
  local result=passed
  ((rc == 0)) || result="FAILED (exit $rc)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$depth" "$name" "${parent:--}" "$wall" "$cpu" "$machine" "$result" \
    "$(tools_summary "$tools")" >>"$ARCHFILTER_STAGE_TABLE"
  [[ -z $parent_tools ]] || cat "$tools" >>"$parent_tools"
  rm -f "$tools" "$tools.cpu"
  return "$rc"
}

# summary: the table (stages in order, each followed by its rows) on stdout and
# in stages.txt; fails when a stage did.
summary() {
  [[ -s $TABLE ]] || { echo "no stages recorded in $TABLE" >&2; return 1; }
  table >"${TABLE%.tsv}.txt"
  cat "${TABLE%.tsv}.txt"
  ! awk -F'\t' '$1 == "0" && $7 != "passed" {bad = 1} END {exit !bad}' "$TABLE"
}

table() {
  local total=0 line depth name parent wall cpu machine result tools
  {
    printf '%-30s %9s %9s %9s  %-17s %s\n' STAGE WALL CPU MACHINE RESULT TOOLS
    # Each stage's rows were written before the stage itself: print the stage first.
    local -a pending=() background=()
    while IFS= read -r line; do
      IFS=$'\t' read -r depth name parent wall cpu machine result tools <<<"$line"
      if [[ $depth == 1 ]]; then
        pending+=("$line")
        continue
      fi
      if [[ $depth == b ]]; then
        background+=("$line")
        continue
      fi
      total=$((total + wall))
      printf '%-30s %9s %9s %9s  %-17s %s\n' "$name" "$(duration "$wall")" "$(duration "$cpu")" \
        "$(duration "$machine")" "$result" "$tools"
      local p
      for p in "${pending[@]}"; do
        IFS=$'\t' read -r depth name parent wall cpu machine result tools <<<"$p"
        printf '%-30s %9s %9s %9s  %-17s %s\n' "  $name" "$(duration "$wall")" "$(duration "$cpu")" \
          "$(duration "$machine")" "$result" "$tools"
      done
      pending=()
    done <"$TABLE"
    printf '%-30s %9s\n' total "$(duration "$total")"
    for line in "${background[@]}"; do
      IFS=$'\t' read -r depth name parent wall cpu machine result tools <<<"$line"
      printf '%-30s %9s %9s %9s  %-17s %s\n' "$name" "$(duration "$wall")" "$(duration "$cpu")" \
        "$(duration "$machine")" "$result" "$tools"
    done
    printf '\nWALL: elapsed. CPU: user+sys of the stage'"'"'s processes (2 cores: at most 2x WALL). MACHINE: the\n'
    printf 'whole machine'"'"'s busy CPU meanwhile, whatever ran it (more than CPU: other work, or daemons\n'
    printf 'the stage started, such as a cluster'"'"'s etcd and API server). TOOLS: from the tools cache\n'
    printf '(%s), built, or waited for while tools-ahead built them (make tools-ahead: the\n' \
      "${ARCHFILTER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/archfilter}"
    printf 'tools built from module graphs of their own, in the background beside the first stages;\n'
    printf 'not counted in the total).\n'
  }
}

# ahead_start MAKEVAR=VALUE...: `make tools-ahead` in the background, in a
# session of its own, when the machine has the memory for a link (about 2 GB)
# beside the stages' (ARCHFILTER_TOOLS_AHEAD=0: never). Its builds are niced
# like every tools build (hack/cluster/lib.sh), the tests are not; a stage
# needing a tool it is building waits for it (flock) instead of building it
# twice.
AHEAD_PID=
AHEAD_PGID_FILE=$CACHE/tools-ahead.pgid
ahead_start() {
  [[ ${ARCHFILTER_TOOLS_AHEAD:-1} != 0 ]] || return 0
  local avail
  avail=$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' /proc/meminfo)
  if ((avail < 8)); then
    printf '==> make test: not building tools ahead: %s GiB of memory available (fewer than 8)\n' "$avail" >&2
    return 0
  fi
  printf '==> make test: building the tools of module graphs of their own in the background (make tools-ahead, log %s)\n' \
    "${CACHE#"$ROOT"/}/tools-ahead.log" >&2
  rm -f "$AHEAD_PGID_FILE"
  # shellcheck disable=SC2016 # $$ and $1 are the inner bash's
  (
    STAGE_DEPTH=b run "tools-ahead (background)" -- \
      setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$AHEAD_PGID_FILE" \
      "${MAKE:-make}" --no-print-directory tools-ahead "$@"
  ) >"$CACHE/tools-ahead.log" 2>&1 &
  AHEAD_PID=$!
}

# ahead_stop: make tools-ahead is done by now (the stages that need its tools
# waited for them); if not, stop it: what it did not finish is not cached.
ahead_stop() {
  [[ -n $AHEAD_PID ]] || return 0
  if kill -0 "$AHEAD_PID" 2>/dev/null && [[ -f $AHEAD_PGID_FILE ]]; then
    printf '==> make test: stopping make tools-ahead (still running)\n' >&2
    kill -TERM -- "-$(cat "$AHEAD_PGID_FILE")" 2>/dev/null || true
  fi
  wait "$AHEAD_PID" 2>/dev/null || true
  rm -f "$AHEAD_PGID_FILE"
  AHEAD_PID=
}

# all STAGE... [-- MAKEVAR=VALUE...]: make test.
all() {
  local stages=() vars=()
  while (($#)); do
    if [[ $1 == -- ]]; then
      shift
      vars=("$@")
      break
    fi
    stages+=("$1")
    shift
  done
  mkdir -p "$CACHE"
  : >"$TABLE"
  export ARCHFILTER_STAGE_TABLE=$TABLE
  unset ARCHFILTER_STAGE ARCHFILTER_STAGE_TOOLS
  local i=0 s start
  start=$(date +%s)
  ahead_start "${vars[@]}"
  trap ahead_stop EXIT
  for s in "${stages[@]}"; do
    i=$((i + 1))
    printf '\n\033[1m==> make test: stage %d/%d: %s\033[0m\n' "$i" "${#stages[@]}" "$s" >&2
    run "$s" -- "${MAKE:-make}" --no-print-directory "$s" "${vars[@]}" ||
      printf '\033[1;31m==> make test: stage %s failed; going on with the others\033[0m\n' "$s" >&2
  done
  ahead_stop
  printf '\n\033[1m==> make test: %d stages in %s (%s)\033[0m\n' "${#stages[@]}" "$(duration $(($(date +%s) - start)))" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" >&2
  summary
}

case ${1:-} in
  all | run | summary)
    cmd=$1
    shift
    "$cmd" "$@"
    ;;
  *)
    echo "usage: $0 all STAGE... [-- VAR=VALUE...] | run NAME -- CMD... | summary" >&2
    exit 2
    ;;
esac
