# fuselib.bash -- sourced by tests/fuse/*.sh (not a test itself: CTest runs
# *.sh only).  Skips (exit 77, with the reason on stdout) when /dev/fuse is
# unusable, a mount cannot be made here, or a program is missing -- under
# CI=true each of those fails the test instead (exit 1, the same line),
# except a machine without /dev/fuse (tests/common/skip.bash); mounts
# and unmounts images through `ubjfs mount`; always cleans up (every mount
# it made is detached and every daemon it started is gone at exit).  Every
# check exits at once (fl_fail, set -e).
#
#   fl_init                 probe FUSE, make $T (a scratch directory)
#   fl_skip REASON          skip (fail under CI=true)
#   fl_need PROG...         skip unless every PROG is installed
#   fl_modes                the consistency modes to run real programs in
#   fl_crash_modes          the built modes that promise crash consistency
#   fl_mkfs IMG SIZE MODE   make an image
#   fl_mount IMG MNT MODE [ubjfs mount options...]
#                           (the daemon's stderr goes to $T/daemon.MNT.log,
#                           printed when the test fails)
#   fl_umount MNT           fusermount3 -u; wait for the daemon to exit 0
#   fl_kill9 MNT [PID...]   kill -9 the daemon, wait for the writers PID...
#                           to fail, detach the dead mount
#   fl_fsck IMG             fsck -n must say clean (exit 0)
#   fl_sqlite_dirsync_gap LOG DIR
#                           did sqlite3 (traced into LOG) acknowledge its
#                           last commit without syncing DIR?
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../common/skip.bash"
. "$(dirname "${BASH_SOURCE[0]}")/../common/proc.bash"
. "$(dirname "${BASH_SOURCE[0]}")/../common/python.bash"
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: \`$BASH_COMMAND\` exited $?" >&2' ERR

: "${UBJ_TOOL:?UBJ_TOOL must name the built ubjfs binary}"
UBJ=$UBJ_TOOL
FL_MOUNTS=()
declare -A FL_PID=()

# fl_skip -- skip the test with a reason (a failure under CI=true)
fl_skip() {
  test_skip "$@"
}

# fl_need -- skip unless every program is installed
fl_need() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null 2>&1 || fl_skip "$p is not installed (scripts/install-deps)"
  done
}

# fl_daemon_logs -- print what each daemon wrote to its --log (the last
# 40 lines of each non-empty one): an abort, a sanitizer report, an error
fl_daemon_logs() {
  local f
  for f in "$T"/daemon.*.log; do
    [ -s "$f" ] || continue
    echo "--- $(basename "$f") (the daemon's stderr), last 40 lines:"
    tail -n 40 "$f"
  done
}

# fl_cleanup -- on failure show the daemons' logs; detach every mount we
# made, kill leftover daemons, rm $T
fl_cleanup() {
  local rc=$? m
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "${T:-}" ] && [ -d "$T" ]; then
    fl_daemon_logs
  fi
  for m in "${FL_MOUNTS[@]}"; do
    if mountpoint -q "$m" 2>/dev/null; then
      fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true
    fi
    local pid=${FL_PID[$m]:-}
    if [ -n "$pid" ] && pid_alive "$pid"; then
      sleep 1
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  if [ -n "${T:-}" ] && [ -d "$T" ]; then
    rm -rf "$T"
  fi
  if [ -n "${FL_NVMDIR:-}" ] && [ -d "$FL_NVMDIR" ]; then
    rm -rf "$FL_NVMDIR"
  fi
}

# fl_init -- probe that FUSE mounts work here; make $T
fl_init() {
  [ -e /dev/fuse ] ||
    test_skip_fact "/dev/fuse does not exist (no FUSE in this kernel or container)"
  { [ -r /dev/fuse ] && [ -w /dev/fuse ]; } || fl_skip "/dev/fuse is not usable by uid $(id -u)"
  fl_need fusermount3 mountpoint
  [ -x "$UBJ" ] || { echo "FAIL: $UBJ is not built"; exit 1; }
  T=$(mktemp -d "${TMPDIR:-/tmp}/ubjfs-fuse.XXXXXX")
  trap fl_cleanup EXIT
  FL_NVMDIR=$T
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    FL_NVMDIR=$(mktemp -d /dev/shm/ubjfs-fuse.XXXXXX)
  fi
  "$UBJ" mkfs -q -s 8M "$T/probe.img"
  mkdir "$T/probe"
  local out
  if ! out=$("$UBJ" mount "$T/probe.img" "$T/probe" 2>&1); then
    fl_skip "cannot mount through FUSE here: $out"
  fi
  fusermount3 -u "$T/probe"
  rm -rf "$T/probe" "$T/probe.img"
}

# fl_mode_built -- is consistency mode $1 built? (mkfs refuses unknown ones)
fl_mode_built() {
  local img=$T/modeprobe.img rc=0
  "$UBJ" mkfs -q -f -m "$1" -s 2M "$img" >/dev/null 2>&1 || rc=$?
  rm -f "$img"
  [ "$rc" = 0 ]
}

# fl_modes -- $UBJ_FUSE_MODES, else the built ones of `ubj ordered sync`
# (issue 5 asks for the first two, issue 21 for sync), else `none` while
# none of them is built
fl_modes() {
  if [ -n "${UBJ_FUSE_MODES:-}" ]; then
    echo "$UBJ_FUSE_MODES"
    return
  fi
  local m out=""
  for m in ubj ordered sync; do
    if fl_mode_built "$m"; then out="$out $m"; fi
  done
  echo "${out:- none}"
}

# fl_crash_modes -- $UBJ_FUSE_CRASH_MODES, else the built modes of
# `ubj ordered journal sync` (sync: integrity only, but every fsync'd
# record and acknowledged SQLite commit survives a kill -9 all the same)
fl_crash_modes() {
  if [ -n "${UBJ_FUSE_CRASH_MODES:-}" ]; then
    echo "$UBJ_FUSE_CRASH_MODES"
    return
  fi
  local m out=""
  for m in ubj ordered journal sync; do
    if fl_mode_built "$m"; then out="$out $m"; fi
  done
  echo "$out"
}

# fl_nvm IMG -- the NVM region file of IMG (mode ubj): under /dev/shm
# (tmpfs: survives the daemon's crash, as the brief's emulation) when
# there is one, else beside the image
fl_nvm() {
  echo "$FL_NVMDIR/$(basename "$1").nvm"
}

# fl_mkfs IMG SIZE MODE -- make an image (and, for ubj, its region)
fl_mkfs() {
  local extra=()
  if [ "$3" = ubj ]; then extra+=(--nvm "$(fl_nvm "$1")"); fi
  "$UBJ" mkfs -q -f -s "$2" -m "$3" "${extra[@]}" "$1"
}

# fl_mount IMG MNT MODE [OPTIONS...] -- mount; the daemon's pid is kept
fl_mount() {
  local img=$1 mnt=$2 mode=$3
  shift 3
  mkdir -p "$mnt"
  local extra=()
  if [ "$mode" = ubj ]; then extra+=(--nvm "$(fl_nvm "$img")"); fi
  "$UBJ" mount -m "$mode" "${extra[@]}" --pid-file "$T/pid.$$" \
    --log "$T/daemon.$(basename "$mnt").log" "$@" "$img" "$mnt"
  FL_MOUNTS+=("$mnt")
  FL_PID[$mnt]=$(cat "$T/pid.$$")
  mountpoint -q "$mnt" || { echo "FAIL: $mnt is not a mount point after ubjfs mount"; exit 1; }
}

# fl_wait_gone PID SECONDS -- wait for a process to exit; 0 if it did
fl_wait_gone() {
  local pid=$1 i
  for ((i = 0; i < $2 * 50; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.02
  done
  return 1
}

# fl_umount MNT -- unmount cleanly: the daemon commits and exits
fl_umount() {
  local mnt=$1 pid=${FL_PID[$1]:-}
  fusermount3 -u "$mnt"
  if [ -n "$pid" ] && ! fl_wait_gone "$pid" 120; then
    echo "FAIL: the daemon of $mnt (pid $pid) did not exit after fusermount3 -u"
    exit 1
  fi
  unset "FL_PID[$mnt]"
}

# fl_kill9 MNT [WRITER_PID...] -- crash the daemon; wait for the writers
# (processes of the test that write through MNT), which fail on the dead
# mount, to end; only then detach it.  A writer still running after the
# detach finds no mount at its next open and writes on into the
# directory beneath, for as long as its loop lasts (fuse_crash under ASan
# ran into the CTest timeout so, its appender at record 50 000).
fl_kill9() {
  local mnt=$1 pid=${FL_PID[$1]} w
  shift
  kill -9 "$pid"
  fl_wait_gone "$pid" 30 || { echo "FAIL: pid $pid survived kill -9"; exit 1; }
  for w in "$@"; do
    fl_wait_gone "$w" 30 && continue
    kill -9 "$w" 2>/dev/null || true
    echo "FAIL: writer $w still running 30 s after the daemon died (not writing through $mnt?)"
    exit 1
  done
  fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  unset "FL_PID[$mnt]"
}

# fl_fsck IMG -- the image must check clean
fl_fsck() {
  local out rc=0
  out=$("$UBJ" fsck -n "$1" 2>&1) || rc=$?
  if [ "$rc" != 0 ]; then
    echo "FAIL: fsck -n $1 exited $rc:"
    echo "$out"
    exit 1
  fi
}

# fl_fail MESSAGE -- fail the test
fl_fail() {
  echo "FAIL: $*"
  exit 1
}

# fl_sqlite_dirsync_gap LOG DIR -- true when sqlite3, traced by
# `strace -e trace=unlink,openat -o LOG`, acknowledged its last
# rollback-journal commit without the directory sync that makes it
# durable: its last successful unlink of a *-journal file is followed by a
# failed open of DIR (the journal's directory, an absolute path) and by no
# successful one.  sqlite's unixDelete() (os_unix.c) treats a directory it
# cannot open as synced; through FUSE that happens when the daemon dies
# between answering the unlink and the open (ECONNABORTED), and the commit
# then rolls back from the hot journal at the next open although it was
# acknowledged.  tests/fuse/sqlite_gap.sh makes that crash on purpose.
fl_sqlite_dirsync_gap() {
  awk -v dir="\"$2\"" '
    /unlink\(".*-journal"\) = 0/ { u = 1; f = 0; next }
    u && index($0, "openat(AT_FDCWD, " dir ",") {
      if ($0 ~ / = -1 /) f = 1; else u = 0
    }
    END { exit !(u && f) }' "$1"
}
