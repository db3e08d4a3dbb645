#!/usr/bin/env bash
# uring.sh -- FUSE over io_uring (src/fuse/fuse_uring.c).  Runs only where
# the kernel offers it (Linux 6.14+, /sys/module/fuse/parameters/
# enable_uring = Y; scripts/test turns it on for its clang and sanitizer
# passes, so the other FUSE tests run through the ring there too).
# Checks: the daemon says its requests go through the ring (and does not
# with -o no_io_uring); requests made on each CPU (taskset) succeed;
# big writes and reads (1 MiB, the payload limit) round-trip byte for
# byte; a tree of files and directories with names, links, renames and
# xattrs matches a copy made on the host; a kill -9 while a writer appends
# with fsync keeps every acknowledged record and the image checks clean;
# unmounting ends the ring threads (the daemon exits 0); with io_uring
# refused to processes (kernel.io_uring_disabled) the mount falls back to
# /dev/fuse instead of hanging.
. "$(dirname "$0")/fuselib.bash"
fl_need taskset dd cmp python3
param=/sys/module/fuse/parameters/enable_uring
# a kernel without the parameter, one where it cannot be switched on, and
# scripts/test's /dev/fuse pass (UBJ_TEST_URING=off) skip even under
# CI=true; a switchable parameter left off fails there
[ -r "$param" ] || test_skip_fact "this kernel has no FUSE over io_uring ($param)"
if [ "$(cat "$param")" != Y ]; then
  [ "${UBJ_TEST_URING:-}" != off ] ||
    test_skip_fact "this pass runs FUSE through /dev/fuse (UBJ_TEST_URING=off)"
  [ -w "$param" ] || test_skip_fact "FUSE over io_uring is off and cannot be switched on ($param)"
  fl_skip "FUSE over io_uring is off ($param = N; echo Y >$param turns it on)"
fi
fl_init
img=$T/disk.img
mnt=$T/mnt
mkdir -p "$mnt"

# uring_dump -- a step failed: say how the -d daemon is doing and show the
# end of its trace (the test's files go at exit, so this is the evidence)
uring_dump() {
  trap - ERR
  if [ -n "${DPID:-}" ] && ! kill -0 "$DPID" 2>/dev/null; then
    local rc=0
    wait "$DPID" 2>/dev/null || rc=$?
    echo "the -d daemon (pid $DPID) is gone: exit status $rc" \
      "($([ "$rc" -gt 128 ] && echo "signal $((rc - 128))" || echo "no signal"))"
  fi
  if [ -s "$T/trace" ]; then
    echo "last lines of its trace ($T/trace):"
    grep -v '^   ' "$T/trace" | tail -n 30
  fi
}
trap uring_dump ERR
fl_fail() {
  echo "FAIL: $*"
  uring_dump
  exit 1
}

# debug_mount OPT -- mount in the foreground with -d, the trace in $T/trace
debug_mount() {
  "$UBJ" mount -d -o "$1" -m none "$img" "$mnt" >"$T/trace" 2>&1 &
  DPID=$!
  FL_MOUNTS+=("$mnt")                      # fl_cleanup detaches it on failure
  FL_PID[$mnt]=$DPID
  local i
  for ((i = 0; i < 100; i++)); do
    mountpoint -q "$mnt" && return 0
    sleep 0.1
  done
  fl_fail "the -d mount did not come up: $(head -5 "$T/trace")"
}

# debug_umount -- unmount; the daemon must exit 0
debug_umount() {
  fusermount3 -u "$mnt"
  wait "$DPID" || fl_fail "the daemon exited $? after fusermount3 -u"
  unset "FL_PID[$mnt]"
}

"$UBJ" mkfs -q -s 256M -m none "$img"
debug_mount io_uring
for cpu in $(seq 0 $(($(nproc) - 1))); do
  taskset -c "$cpu" sh -c "echo cpu $cpu >'$mnt/c$cpu' && cat '$mnt/c$cpu'" >/dev/null
done
grep -q "FUSE requests go through io_uring" "$T/trace" ||
  fl_fail "no request went through the ring: $(grep -v '^ ' "$T/trace" | head -5)"
# 1 MiB requests both ways, and odd sizes
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$T/big"
dd if="$T/big" of="$mnt/big" bs=1M status=none
cmp "$T/big" "$mnt/big" || fl_fail "a 3 MiB file read back differently"
dd if="$mnt/big" of="$T/back" bs=1M iflag=direct status=none 2>/dev/null ||
  cp "$mnt/big" "$T/back"
cmp "$T/big" "$T/back" || fl_fail "a 3 MiB file copied out differently"
# a small tree: names, symlinks, hard links, renames, xattrs
mkdir -p "$T/ref"
for d in "$mnt/t" "$T/ref/t"; do
  mkdir -p "$d/a/b" "$d/c"
  for i in $(seq 1 50); do echo "file $i" >"$d/a/f$i"; done
  ln -s ../a/f1 "$d/c/sym"
  ln "$d/a/f2" "$d/c/hard"
  mv "$d/a/f3" "$d/a/b/moved"
  rm "$d/a/f4"
done
diff -r --no-dereference "$T/ref/t" "$mnt/t" >"$T/diff" || fl_fail "tree differs: $(head -3 "$T/diff")"
grep -q "FUSE requests go through io_uring" "$T/trace" || fl_fail "ring not used"
echo "  io_uring: requests from each CPU, 3 MiB round trip, a tree of names matches"

# space freed by rm is there for the next write at once: an unlinked
# file's blocks go when its FORGET is handled, which the lazy /dev/fuse
# reader must not delay into a false ENOSPC (unlink kicks it; ENOSPC waits)
rm -rf "$mnt/t" "$mnt/big"
for ((k = 1; k <= 6; k++)); do
  dd if=/dev/zero of="$mnt/fill" bs=1M count=180 status=none 2>"$T/dd.err" ||
    fl_fail "round $k: writing 180 MiB into a 256 MiB image right after rm: $(cat "$T/dd.err")"
  rm "$mnt/fill"
done
echo "  180 MiB written and removed 6 times in a 256 MiB image: no ENOSPC"
# df right after rm: the file's blocks are free although its FORGET may
# still wait for the lazy reader (asleep up to 100 ms after 0.3 s of
# quiet): statfs takes the pending FORGETs itself; the same after the last
# close of a file unlinked while open (and not before it)
for how in unlink close; do
  dd if=/dev/zero of="$mnt/fill" bs=1M count=100 status=none
  sleep 0.3
  freed=$(python3 -c 'import os, sys
m, how = sys.argv[1], sys.argv[2]
mib = lambda a, s: (s.f_bavail - a) * s.f_frsize // 1048576
a0 = os.statvfs(m).f_bavail
fd = os.open(m + "/fill", os.O_RDONLY) if how == "close" else -1
os.unlink(m + "/fill")                   # and statfs at once after
held = mib(a0, os.statvfs(m))
if fd >= 0:
    os.close(fd)
print(held if fd >= 0 else 0, mib(a0, os.statvfs(m)))' "$mnt" "$how")
  set -- $freed
  [ "$1" -lt 100 ] || fl_fail "[$how] 100 MiB freed while the file was still open"
  [ "$2" -ge 100 ] || fl_fail "[$how] df right after the $how of 100 MiB shows $2 MiB freed"
done
echo "  df right after unlink, and after the last close of an unlinked file: 100 MiB freed"
debug_umount
fl_fsck "$img"

# -o no_io_uring: /dev/fuse only
debug_mount no_io_uring
[ "$(cat "$mnt/c0" 2>&1)" = "cpu 0" ] ||
  fl_fail "after a clean unmount and a remount, c0 reads '$(cat "$mnt/c0" 2>&1)'"
debug_umount
if grep -q "FUSE requests go through io_uring" "$T/trace"; then
  fl_fail "-o no_io_uring still used the ring"
fi
echo "  no_io_uring: /dev/fuse only"

# SIGTERM after unlinks: the lazy /dev/fuse reader is cancelled by libfuse
# at exit and must not leave its lock held (the daemon hung in join)
fl_mount "$img" "$mnt" none
mkdir -p "$mnt/s"
for i in $(seq 1 40); do echo "$i" >"$mnt/s/f$i"; done
rm -rf "$mnt/s"
sleep 0.3
pid=${FL_PID[$mnt]}
kill -TERM "$pid"
fl_wait_gone "$pid" 20 || fl_fail "the daemon did not exit within 20 s of SIGTERM after unlinks"
unset "FL_PID[$mnt]"
fusermount3 -u -z "$mnt" 2>/dev/null || true
fl_fsck "$img"
echo "  SIGTERM after unlinks: the daemon exits, the image is clean"

# io_uring refused to the daemon (sysctl kernel.io_uring_disabled=2): the
# mount must fall back to /dev/fuse, not ask the kernel for the ring (which
# would then hold every request until queues that can never register do)
sysctl_f=/proc/sys/kernel/io_uring_disabled
if [ -w "$sysctl_f" ]; then
  was=$(cat "$sysctl_f")
  echo 2 >"$sysctl_f"
  trap 'echo "$was" >"$sysctl_f"; fl_cleanup' EXIT
  debug_mount io_uring
  timeout 20 sh -c "echo fallback >'$mnt/fb' && cat '$mnt/fb'" >"$T/fb.out" 2>&1 ||
    fl_fail "with io_uring disabled the mount does not answer: $(cat "$T/fb.out")"
  debug_umount
  echo "$was" >"$sysctl_f"
  trap fl_cleanup EXIT
  if grep -q "FUSE requests go through io_uring" "$T/trace"; then
    fl_fail "io_uring was disabled, yet the ring was used"
  fi
  echo "  io_uring_disabled=2: falls back to /dev/fuse"
fi

# a crash while appending with fsync (mode ubj when built: the ring's
# replies are the acknowledgements)
mode=$(fl_crash_modes | awk '{print $1}')
if [ -n "$mode" ]; then
  rm -f "$img"
  fl_mkfs "$img" 256M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  : >"$T/acked"
  ( for ((n = 1; n <= 100000; n++)); do
      printf '%-63s\n' "record $n" | dd of="$mnt/log" bs=64 count=1 oflag=append \
        conv=notrunc,fsync status=none 2>/dev/null || exit 0
      echo "$n" >>"$T/acked"
    done ) &
  wpid=$!
  sleep 2
  fl_kill9 "$mnt" "$wpid"
  wait "$wpid" 2>/dev/null || true
  last=$(tail -n 1 "$T/acked")
  last=${last:-0}
  fl_mount "$img" "$mnt" "$mode"
  for ((n = 1; n <= last; n++)); do printf '%-63s\n' "record $n"; done >"$T/want"
  head -c $((last * 64)) "$mnt/log" | cmp -s - "$T/want" ||
    fl_fail "[$mode] after kill -9 the first $last acknowledged records are not intact"
  fl_umount "$mnt"
  fl_fsck "$img"
  echo "  [$mode] kill -9 during fsync'd appends: all $last acknowledged records there"
fi
echo "uring.sh: ok"
