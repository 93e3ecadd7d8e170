# shellcheck shell=bash
# The per-user cache of built tools: etcd, kube-apiserver, kubelet, KWOK,
# kustomize, Karpenter's provider... Like Go's build cache it lives outside
# the clone and is keyed by everything that determines the binary, so a second
# clone (or CI after a developer's session) finds them and builds nothing.
# Only immutable build output lives here; per-run state (clusters, registries,
# logs) stays in the clone's .cache/.
#
#   $ARCHFILTER_TOOLS_CACHE  (default ${XDG_CACHE_HOME:-$HOME/.cache}/archfilter)
#     <name>-<version>-<key>/   one entry: the tool's files, and KEY (the inputs hashed)
#     .locks/<entry>.lock       flock(1) of the builder of that entry
#     .tmp-<entry>-XXXXXX/      an entry being built (renamed into place when verified)
#
# Source it (hack/cluster/lib.sh does) after log, info and die are defined.
# The one builder is cached_build; hack/cluster/tools.sh and
# hack/karpenter/tools.sh define the tools.

ARCHFILTER_TOOLS_CACHE=${ARCHFILTER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/archfilter}
export ARCHFILTER_TOOLS_CACHE

# Bump to rebuild every tool (a change of layout or of what KEY means).
TOOLS_CACHE_FORMAT=1

# go_key prints the Go toolchain's part of a key: version, target and the
# settings that change generated code. Computed once per shell.
go_key() {
  if [[ -z ${_GO_KEY:-} ]]; then
    _GO_KEY=$(go env GOVERSION GOOS GOARCH GOAMD64 GOARM64 GOEXPERIMENT 2>/dev/null | paste -sd' ' -) \
      || die "go env failed: is Go installed?"
  fi
  printf 'go=%s\n' "$_GO_KEY"
}

# files_key FILE...: the content hash of module files (go.mod, go.sum).
files_key() {
  local f
  for f in "$@"; do
    [[ -f $f ]] || die "files_key: $f does not exist"
  done
  printf 'files=%s\n' "$(cat "$@" | sha256sum | cut -c1-16)"
}

# tool_key NAME VERSION INPUT...: the key of a tool, as text (one input a
# line). INPUTs are whatever else determines the binary, one per argument:
# go_key, files_key of the module files it is built from, `declare -f` of its
# build function (flags and ldflags as written), the values of the variables
# that function reads.
tool_key() {
  local name=$1 version=$2
  shift 2
  printf '%s\n' "format=$TOOLS_CACHE_FORMAT" "name=$name" "version=$version" "$@"
}

# tool_dir KEY: the entry of the tool whose key is KEY (tool_key).
tool_dir() {
  local name version hash
  name=$(sed -n 's/^name=//p' <<<"$1" | head -1)
  version=$(sed -n 's/^version=//p' <<<"$1" | head -1)
  hash=$(sha256sum <<<"$1" | cut -c1-12)
  printf '%s/%s-%s-%s\n' "$ARCHFILTER_TOOLS_CACHE" "$name" "$version" "$hash"
}

# tool_cached DIR: the entry is complete (renamed into place after its check).
tool_cached() { [[ -f $1/KEY ]]; }

# Progress of a series of builds ("==> [2/5] building kube-apiserver v1.36.5"):
# progress_plan N before them, then every cached_build that builds is a step.
progress_plan() { _PROGRESS_TOTAL=$1 _PROGRESS_STEP=0; }
progress_step() {
  if [[ ${_PROGRESS_TOTAL:-0} -gt 0 ]]; then
    _PROGRESS_STEP=$((_PROGRESS_STEP + 1))
    log "[$_PROGRESS_STEP/$_PROGRESS_TOTAL] $*"
  else
    log "$*"
  fi
}

# tools_record STATUS LABEL [SECONDS]: tell the stage running us (hack/stage.sh
# sets ARCHFILTER_STAGE_TOOLS) that LABEL came from the cache, was built, or
# came from the cache after waiting SECONDS for another builder (make test's
# tools-ahead).
tools_record() {
  [[ -n ${ARCHFILTER_STAGE_TOOLS:-} ]] || return 0
  printf '%s\t%s\t%s\n' "$1" "$2" "${3:-0}" >>"$ARCHFILTER_STAGE_TOOLS" 2>/dev/null || true
}

# expect_version FILE WANT CMD...: CMD (FILE run with its version flag) exits 0
# and prints WANT; else the build is wrong and is not used.
expect_version() {
  local file=$1 want=$2 out
  shift 2
  [[ -x $file ]] || { warn "$file was not built"; return 1; }
  if ! out=$(timeout 60 "$@" 2>&1); then
    warn "$* failed: $out"
    return 1
  fi
  if [[ $out != *"$want"* ]]; then
    warn "$* reports '$out', not $want"
    return 1
  fi
}

# expect_help FILE WANT ARG...: for a tool without a version flag, FILE ARG...
# (its help) runs, whatever its exit status, and prints WANT.
expect_help() {
  local file=$1 want=$2 out rc=0
  shift 2
  [[ -x $file ]] || { warn "$file was not built"; return 1; }
  out=$(timeout 60 "$file" "$@" 2>&1) || rc=$?
  if ((rc >= 124)) || [[ $out != *"$want"* ]]; then
    warn "$file $* (exit $rc) does not print $want: $out"
    return 1
  fi
}

# cached_build KEY LABEL VERIFY BUILD [ARG...]
#
# The entry of KEY (tool_dir) if it is there: nothing is built. Else, under an
# exclusive lock of that entry (concurrent builders of one key wait for each
# other; builders of other keys do not), `BUILD TMP ARG...` writes the entry's
# files into TMP, a new directory beside the entry; `VERIFY TMP ARG...` checks
# them (expect_version: the binaries run and report the expected version);
# then TMP is renamed to the entry in one rename(2). A build that fails, is
# interrupted or verifies wrong never becomes the entry: its TMP is removed
# now or by the next builder of that key. BUILD runs in a subshell with
# errexit on. LABEL ("kube-apiserver v1.36.5") is for progress lines and the
# stage record (tools_record).
cached_build() {
  local key=$1 label=$2 verify=$3 build=$4 dir
  shift 4
  dir=$(tool_dir "$key")
  if tool_cached "$dir"; then
    tools_record cached "$label"
    return 0
  fi
  local base locks lock fd
  base=$(basename "$dir")
  locks=$ARCHFILTER_TOOLS_CACHE/.locks
  mkdir -p "$locks" || die "cannot create $locks (ARCHFILTER_TOOLS_CACHE=$ARCHFILTER_TOOLS_CACHE)"
  lock=$locks/$base.lock
  exec {fd}>"$lock"
  local waited=
  if ! flock -n "$fd"; then
    log "waiting for another build of $label ($lock)"
    waited=$(date +%s)
    flock "$fd"
  fi
  if tool_cached "$dir"; then
    exec {fd}>&-
    if [[ -n $waited ]]; then
      tools_record waited "$label" $(($(date +%s) - waited))
    else
      tools_record cached "$label"
    fi
    return 0
  fi
  # Ours to build: what an interrupted build of this key left is garbage.
  rm -rf "$dir" "$ARCHFILTER_TOOLS_CACHE/.tmp-$base-"*
  local tmp start rc=0 errexit=false hb
  tmp=$(mktemp -d "$ARCHFILTER_TOOLS_CACHE/.tmp-$base-XXXXXX")
  start=$(date +%s)
  progress_step "building $label (once, into ${ARCHFILTER_TOOLS_CACHE/#"$HOME"/\~})"
  # A line a minute while the Go command says nothing, so nobody thinks it hangs.
  # It holds no lock, and takes its sleep with it when stopped.
  (
    exec {fd}>&-
    parent=$$ n=0 s=
    trap '[[ -z $s ]] || kill "$s" 2>/dev/null; exit 0' TERM
    while kill -0 "$parent" 2>/dev/null; do
      sleep 5 &
      s=$!
      wait "$s"
      n=$((n + 5))
      ((n % 60)) || info "... still building $label ($((n / 60))m)"
    done
  ) &
  hb=$!
  [[ $- == *e* ]] && errexit=true
  set +e
  (
    set -e
    "$build" "$tmp" "$@"
  )
  rc=$?
  if ((rc == 0)); then
    "$verify" "$tmp" "$@"
    rc=$?
  fi
  $errexit && set -e
  kill "$hb" 2>/dev/null || true
  wait "$hb" 2>/dev/null || true
  if ((rc != 0)); then
    rm -rf "$tmp"
    exec {fd}>&-
    die "building $label failed (nothing was cached)"
  fi
  printf '%s\n' "$key" "label=$label" "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$tmp/KEY"
  chmod 0755 "$tmp"
  mv -T "$tmp" "$dir" || { rm -rf "$tmp"; exec {fd}>&-; die "could not move $tmp to $dir"; }
  exec {fd}>&-
  local took=$(($(date +%s) - start))
  info "$label built in ${took}s"
  tools_record built "$label" "$took"
}

# clean_tools removes every entry, lock and unfinished build of the tools
# cache (make clean-tools), and the directory if nothing else is in it.
clean_tools() {
  local d=$ARCHFILTER_TOOLS_CACHE n=0 e
  [[ -d $d ]] || { log "no tools cache at $d"; return 0; }
  for e in "$d"/*/KEY; do
    [[ -f $e ]] || continue
    rm -rf "$(dirname "$e")"
    n=$((n + 1))
  done
  rm -rf "$d"/.tmp-* "$d/.locks"
  rmdir "$d" 2>/dev/null || true
  log "removed $n tool(s) from $d"
}
