#!/usr/bin/env bash
# sqlite_gap.sh -- the one way sqlite3 loses an acknowledged commit through
# FUSE, made to happen on purpose, and the proof crash.sh relies on to
# tell it from a file-system bug.  In rollback-journal mode with
# synchronous=EXTRA, a commit is the journal's unlink followed by a sync of
# its directory; sqlite's unixDelete() counts a directory it cannot open as
# synced.  A preloaded shim (preload/killafter.c) kills the daemon right
# after it answered the unlink of commit N: the directory open then fails
# (ECONNABORTED), sqlite3 acknowledges N anyway, and after recovery N has
# rolled back from the hot journal while 1..N-1 are all there.  Checks:
#  1. that is what happens (if sqlite ever syncs or reports the error
#     instead, this test says so: the exception in crash.sh is then moot);
#  2. fl_sqlite_dirsync_gap recognises it from the strace log, and does not
#     when the daemon is killed at any other point of a commit (after each
#     of the five fdatasyncs of one commit: journal, directory, journal
#     header, database, directory), where every acknowledged commit must
#     be there -- so crash.sh's exception excuses exactly this and nothing
#     else.
# Mode ubj (the unlink is not committed until the directory sync), and each
# other built crash-consistent mode -- in mode sync the unlink is on the disk
# before it is answered, so commit N survives (checked too).
. "$(dirname "$0")/fuselib.bash"
fl_need sqlite3 strace cc
fl_init
modes=$(fl_crash_modes)
[ -n "$modes" ] || fl_skip "no crash-consistent mode (ubj, ordered, journal) is built yet"
cc -O2 -shared -fPIC -o "$T/killafter.so" "$(dirname "$0")/preload/killafter.c" -ldl ||
  fl_fail "cannot build the preload shim"
N=12                        # the commit whose unlink the daemon answers last

sql() {
  echo "PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA; CREATE TABLE t(b INTEGER, v BLOB);"
  local b
  for ((b = 1; b <= 40; b++)); do
    echo "BEGIN; INSERT INTO t VALUES($b, randomblob(300)); COMMIT; SELECT 'ack', $b;"
  done
}

# run CALL AFTER -- kill the daemon after the AFTER-th successful CALL
# (unlink of a journal, the CREATE TABLE's commit the first; or
# fdatasync); print the last acknowledged commit, how many of 1..it are
# present after recovery and whether the trace shows the gap: "ACK PRESENT GAP"
run() {
  local img=$T/$mode.img mnt
  mnt=$(realpath -m "$T/mnt-$mode")
  fl_mkfs "$img" 64M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  local suffix=
  [ "$1" = unlink ] && suffix=-journal
  sql | UBJ_KILL_PID=${FL_PID[$mnt]} UBJ_KILL_CALL=$1 UBJ_KILL_SUFFIX=$suffix UBJ_KILL_AFTER=$2 \
    LD_PRELOAD=$T/killafter.so strace -f -qq --seccomp-bpf -e trace=unlink,openat \
    -o "$T/trace" sqlite3 -bail "$mnt/db" >"$T/ack" 2>"$T/err" || true
  grep -q "^killafter: killed" "$T/err" || fl_fail "[$mode] the shim did not kill the daemon: $(cat "$T/err")"
  unset "FL_PID[$mnt]"
  fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  local gap=no ack present
  fl_sqlite_dirsync_gap "$T/trace" "$mnt" && gap=yes
  ack=$(grep -c '^ack|' "$T/ack" || true)
  fl_mount "$img" "$mnt" "$mode"
  present=$(sqlite3 "$mnt/db" "PRAGMA integrity_check; SELECT count(DISTINCT b) FROM t WHERE b <= $ack;" |
    tr '\n' ' ')
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img" "$(fl_nvm "$img")"
  echo "$ack ${present#ok } $gap"
}

for mode in $modes; do
  read -r ack present gap <<<"$(run unlink $((N + 1)))"
  [ "$ack" = "$N" ] || fl_fail "[$mode] killed after commit $N's unlink, sqlite3 acknowledged $ack" \
    "(it no longer acknowledges a commit it could not sync: crash.sh's exception is moot)"
  [ "$gap" = yes ] || fl_fail "[$mode] fl_sqlite_dirsync_gap missed the gap in the trace"
  if [ "$mode" = sync ]; then
    # mode sync writes the journal's unlink (its directory entry's
    # removal) before the daemon answers it: the commit is durable, no gap
    [ "$present" = "$N" ] ||
      fl_fail "[$mode] after recovery $present of commits 1..$N present, want $N (the unlink is synchronous)"
    echo "  [$mode] no gap: commit $N's unlink was on the disk when answered; 1..$N there"
  else
    [ "$present" = $((N - 1)) ] ||
      fl_fail "[$mode] after recovery $present of commits 1..$N present, want $((N - 1)) (1..$((N - 1)))"
    echo "  [$mode] gap made: commit $N acknowledged, rolled back; 1..$((N - 1)) there; trace shows it"
  fi
  # every other kill point of one commit: nothing acknowledged is lost and
  # the classifier excuses nothing
  for ((k = 5 * N; k < 5 * N + 5; k++)); do
    read -r ack present gap <<<"$(run fdatasync $k)"
    [ "$gap" = no ] || fl_fail "[$mode] killed after fdatasync $k: the classifier saw a gap"
    [ "$present" = "$ack" ] ||
      fl_fail "[$mode] killed after fdatasync $k: $present of $ack acknowledged commits there"
    echo "  [$mode] killed after fdatasync $k: all $ack acknowledged commits there, no gap seen"
  done
  echo "sqlite_gap.sh: $mode ok"
done
