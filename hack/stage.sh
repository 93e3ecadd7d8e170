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
# CPU ticks of this shell's waited-for descendants (cutime + cstime).
child_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{print $14 + $15}'; }
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

# tools_summary FILE: "-", "cached (5)", or "built: etcd v3.6.4 (41s), ...; cached: 3".
tools_summary() {
  local file=$1
  [[ -s $file ]] || { echo -; return; }
  awk -F'\t' '
    { if (!($2 in seen)) { order[++n] = $2 } seen[$2] = 1
      if ($1 == "built") { built[$2] = $3 } }
    END {
      nb = 0; nc = 0; b = ""
      for (i = 1; i <= n; i++) {
        l = order[i]
        if (l in built) { s = built[l]; d = (s >= 60) ? sprintf("%dm%02ds", s / 60, s % 60) : s "s"
                          b = b (nb++ ? ", " : "") l " (" d ")" }
        else nc++
      }
      if (nb == 0) { printf "cached (%d)\n", nc; exit }
      printf "built: %s", b
      if (nc) printf "; cached: %d", nc
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
  local depth=0 parent=${ARCHFILTER_STAGE:-} parent_tools=${ARCHFILTER_STAGE_TOOLS:-}
  [[ -n $parent ]] && depth=1
  local tools start m0 c0 rc=0
  tools=$(mktemp "$CACHE/stage-tools.XXXXXX")
  start=$(date +%s)
  m0=$(machine_ticks)
  c0=$(child_ticks)
  ARCHFILTER_STAGE=$name ARCHFILTER_STAGE_TOOLS=$tools "$@" || rc=$?
  local wall=$(($(date +%s) - start))
  local cpu=$((($(child_ticks) - c0) / HZ)) machine=$((($(machine_ticks) - m0) / HZ))
  local result=passed
  ((rc == 0)) || result="FAILED (exit $rc)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$depth" "$name" "${parent:--}" "$wall" "$cpu" "$machine" "$result" \
    "$(tools_summary "$tools")" >>"$ARCHFILTER_STAGE_TABLE"
  [[ -z $parent_tools ]] || cat "$tools" >>"$parent_tools"
  rm -f "$tools"
  return "$rc"
}

# summary: the table (stages in order, each followed by its rows) on stdout and
# in stages.txt; fails when a stage did.
summary() {
  [[ -s $TABLE ]] || { echo "no stages recorded in $TABLE" >&2; return 1; }
  table >"${TABLE%.tsv}.txt"
  cat "${TABLE%.tsv}.txt"
  ! awk -F'\t' '$1 == 0 && $7 != "passed" {bad = 1} END {exit !bad}' "$TABLE"
}

table() {
  local total=0 line depth name parent wall cpu machine result tools
  {
    printf '%-30s %9s %9s %9s  %-17s %s\n' STAGE WALL CPU MACHINE RESULT TOOLS
    # Each stage's rows were written before the stage itself: print the stage first.
    local -a pending=()
    while IFS= read -r line; do
      IFS=$'\t' read -r depth name parent wall cpu machine result tools <<<"$line"
      if [[ $depth == 1 ]]; then
        pending+=("$line")
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
    printf '\nWALL: elapsed. CPU: user+sys of the stage'"'"'s processes (2 cores: at most 2x WALL). MACHINE: the\n'
    printf 'whole machine'"'"'s busy CPU meanwhile, whatever ran it (more than CPU: other work, or daemons\n'
    printf 'the stage started, such as a cluster'"'"'s etcd and API server). TOOLS: from the tools cache\n'
    printf '(%s) or built.\n' "${ARCHFILTER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/archfilter}"
  }
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
  for s in "${stages[@]}"; do
    i=$((i + 1))
    printf '\n\033[1m==> make test: stage %d/%d: %s\033[0m\n' "$i" "${#stages[@]}" "$s" >&2
    run "$s" -- "${MAKE:-make}" --no-print-directory "$s" "${vars[@]}" ||
      printf '\033[1;31m==> make test: stage %s failed; going on with the others\033[0m\n' "$s" >&2
  done
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
