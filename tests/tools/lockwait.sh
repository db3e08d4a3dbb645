#!/usr/bin/env bash
# tests/tools/lockwait.sh -- an image locked by a process that serves no
# mount (what a mount daemon is after `umount`, while it makes its final
# commit: src/tools/imglock.c) is waited for by fsck, ls and cat: they
# succeed once the holder lets go, with one "waiting" note on stderr after
# a second; a holder that also holds the daemon's "served" mark (an OFD
# read lock on byte 0, as python's fcntl takes it) is refused at once (in
# well under the holder's 30 s: the mark must last TOOLS_SERVED_GRACE_S), and one whose
# mark goes first, as a daemon's does after umount, is waited for.
# tests/pkg/mount.sh checks the real daemon (umount; fsck -n).
. "$(dirname "$0")/../common/lib.sh" lockwait
command -v flock >/dev/null || test_skip "no flock (util-linux)"
command -v python3 >/dev/null || test_skip "no python3 (scripts/install-deps)"
img=$tmp/a.img
run 0 "$UBJ_TOOL" mkfs --size 16M "$img"
run 0 "$UBJ_TOOL" cp "$UBJ_SRC/README.md" "$img:/r"

# a plain holder: each tool waits for it, then works (fsck's wait is long
# enough for the note)
for cmd in "fsck -n $img" "ls $img:/" "cat $img:/r"; do
  hold=0.8
  [ "${cmd%% *}" = fsck ] && hold=2.2
  rm -f "$tmp/held"
  # the holder says when it has the lock (a fixed pause raced with a
  # loaded machine: the tool could take the lock first and not wait)
  flock "$img" sh -c 'touch "$1"; sleep "$2"' sh "$tmp/held" "$hold" &
  locker=$!
  for _ in $(seq 600); do [ -e "$tmp/held" ] && break; sleep 0.05; done
  [ -e "$tmp/held" ] || fail "the holder did not take the lock in 30 s"
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  run 0 "$UBJ_TOOL" $cmd
  ms=$((($(date +%s%N) - start) / 1000000))
  [ "$ms" -ge 300 ] || fail "$cmd did not wait for the holder (${ms} ms)"
  if [ "$hold" = 2.2 ]; then
    grep -q "waiting for the process that has it open" "$tmp/err" ||
      fail "$cmd: no waiting note: $(cat "$tmp/err")"
    [ "$(grep -c waiting "$tmp/err")" = 1 ] || fail "$cmd: more than one note"
  fi
  wait "$locker"
done
cmp -s "$tmp/out" "$UBJ_SRC/README.md" || fail "cat after the wait: wrong content"

# mark_holder MARK_S TOTAL_S -- in the background, as a mount daemon:
# the "served" mark for MARK_S seconds and the flock for TOTAL_S; returns
# once both are held ($holder: its pid)
mark_holder() {
  python3 - "$img" "$1" "$2" >"$tmp/py" 2>&1 <<'EOF' &
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
# struct flock: l_type, l_whence (short), l_start, l_len (off_t), l_pid (int)
fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 1, 0))  # F_OFD_SETLK
lk = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(lk, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
os.close(fd)                  # the request loop has ended: unmarked
time.sleep(float(sys.argv[3]) - float(sys.argv[2]))   # the final commit
EOF
  holder=$!
  for _ in $(seq 600); do grep -q held "$tmp/py" && break; sleep 0.05; done
  grep -q held "$tmp/py" || fail "the marking holder did not start in 30 s: $(cat "$tmp/py")"
}

# a holder that marks the image as served: refused (after the grace), not
# waited for -- the holder stays 30 s, so a tool that waited would take
# that long; the bound is loose on purpose (ASan on a loaded machine took
# 2.4 s to be refused)
mark_holder 30 30
start=$(date +%s%N)
run 8 "$UBJ_TOOL" fsck -n "$img"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 15000 ] || fail "fsck of a served image took ${ms} ms: it waited for the holder instead of refusing after the 0.5 s grace"
grep -q "in use" "$tmp/err" || fail "served image: $(cat "$tmp/err")"
grep -q waiting "$tmp/err" && fail "served image: fsck waited: $(cat "$tmp/err")"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true

# a daemon just after umount(8): its mark goes a moment before the lock
# (its request loop sees the unmount, then it makes its final commit):
# the tool must wait for it, not refuse it (before: "in use" at once;
# tests/pkg/mount.sh's `umount; mount` met it in CI)
mark_holder 0.2 1
run 0 "$UBJ_TOOL" fsck -n "$img"
wait "$holder" 2>/dev/null || true
echo "tools lockwait: all checks passed"
