#!/usr/bin/env bash
# readahead.sh -- the mount's side of issue 19, item 1:
#  - --readahead off / -o readahead=off-page answer INIT with
#    max_readahead 0: the mount's bdi read_ahead_kb is 0 (and without the
#    option the kernel's default, above 0), and the kernel then asks for
#    what a program reads and no more: 16 sequential 4 KiB reads of a cold
#    file cost exactly 16 cache misses (more with the kernel's window);
#  - the daemon's read path: by default (the kernel's window above) each
#    READ's blocks are one device request (512 KiB in a handful); with
#    off-page one request per block (512 KiB: 128);
#  - --readahead linux and linux-2013:64 answer INIT with max_readahead 0
#    too (the daemon's window is the only one): 16 sequential 4 KiB reads
#    read ahead the 60 blocks of the windows (0,4) (4,8) (12,16) (28,32);
#  - adaptive mounts too; oracle (it needs a trace's future), a bad window
#    and unknown names are usage errors (exit 2, one line);
#  - by default OPEN is answered ENOSYS (the kernel opens files itself);
#    with -o file_handles OPEN and RELEASE are answered (fi->fh carries a
#    struct ubj_file): in the daemon's -d trace OPEN succeeds and RELEASE
#    comes, and a file unlinked while open is read through its handle.
# Fails on ad20b32: readahead= is an unknown option, and OPEN is answered
# ENOSYS (the kernel's no-open mode).
. "$(dirname "$0")/fuselib.bash"
fl_need python3
fl_init
img=$T/disk.img
mnt=$T/mnt
st=$T/stats
fl_mkfs "$img" 64M none
head -c 1048576 /dev/urandom >"$T/big"
"$UBJ" cp "$T/big" "$img:/big"
mkdir -p "$mnt"

# counter NAME -- NAME's value now (cache_misses; reads: the image's read
# requests): the daemon's report after a SIGUSR1 (it replaces --stats
# FILE by a rename: never half written)
counter() {
  local i
  rm -f "$st"
  kill -USR1 "${FL_PID[$mnt]}"
  for ((i = 0; i < 100; i++)); do
    grep -qs '(SIGUSR1)' "$st" && break
    sleep 0.1
  done
  awk -v k="$1" '$1 == k { v = $2 } END { if (v == "") exit 1; print v }' "$st" ||
    fl_fail "no $1 in the report after SIGUSR1"
}
misses() { counter cache_misses; }
# ra_blocks -- blocks read ahead so far (0 before the first: no line)
ra_blocks() {
  counter cache_hits >/dev/null   # a fresh report
  awk '$1 == "ra_blocks" { v = $2 } END { print v == "" ? 0 : v }' "$st"
}

# fh_work -- files through their handles: create, open, unlink while
# open, a write-only open, O_TRUNC on OPEN
fh_work() {
  python3 - "$mnt" <<'PY' || fl_fail "file_handles: the workload failed"
import os, sys
d = sys.argv[1]
p = os.path.join(d, 'h')
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b'x' * 10000, 0)
fd2 = os.open(p, os.O_RDONLY)
os.unlink(p)
assert os.pread(fd2, 10000, 0) == b'x' * 10000
os.close(fd)
assert os.pread(fd2, 5, 9995) == b'xxxxx'
os.close(fd2)
fd = os.open(os.path.join(d, 'big'), os.O_WRONLY)
assert os.pwrite(fd, b'y', 0) == 1
os.close(fd)
t = os.path.join(d, 't')
fd = os.open(t, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b'abc')
os.close(fd)
fd = os.open(t, os.O_RDWR | os.O_TRUNC)
assert os.fstat(fd).st_size == 0
os.close(fd)
os.unlink(t)
PY
}

# ra_run LABEL [OPTIONS...] -- mount cold, print "read_ahead_kb misses"
# where misses are those of 16 sequential 4 KiB reads of big.  LABEL
# trace.*: the daemon in the foreground with -d, its trace in $T/LABEL.
ra_run() {
  local label=$1 i
  shift
  rm -f "$st"
  if [ "${label%%.*}" = trace ]; then
    "$UBJ" mount -d -m none --stats "$st" "$@" "$img" "$mnt" 2>"$T/$label" &
    FL_MOUNTS+=("$mnt")
    FL_PID[$mnt]=$!
    for ((i = 0; i < 100; i++)); do mountpoint -q "$mnt" && break; sleep 0.1; done
  else
    fl_mount "$img" "$mnt" none --stats "$st" "$@"
  fi
  local kb
  kb=$(cat "/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb")
  stat "$mnt/big" >/dev/null                    # the inode is cached
  local m1 m2 a1 a2
  m1=$(misses)
  a1=$(ra_blocks)
  dd if="$mnt/big" of=/dev/null bs=4096 count=16 status=none
  m2=$(misses)
  a2=$(ra_blocks)
  local r1 r2
  r1=$(counter reads)
  dd if="$mnt/big" of=/dev/null bs=131072 skip=4 count=4 status=none
  r2=$(counter reads)
  if [ "$label" = trace.fh ]; then fh_work >&2; fi
  fl_umount "$mnt"
  echo "$kb $((m2 - m1)) $((r2 - r1)) $((a2 - a1))"
}

read -r kb n r _ <<<"$(ra_run trace.default)"
[ "$kb" -gt 0 ] || fl_fail "[default] read_ahead_kb $kb, want the kernel's (> 0)"
[ "$n" -gt 16 ] || fl_fail "[default] 16 reads of 4 KiB missed $n blocks: no kernel read-ahead?"
# the kernel's READs (up to its window) each one device request (the
# daemon's read path "off"): 512 KiB in a handful, not 128
[ "$r" -ge 1 ] && [ "$r" -le 16 ] ||
  fl_fail "[default] 4 x 128 KiB took $r device reads, want 1..16 (one per READ)"
echo "readahead.sh: default: read_ahead_kb $kb, 16 x 4 KiB read $n blocks; 512 KiB in $r device reads"
read -r kb n r _ <<<"$(ra_run off --readahead off)"
[ "$kb" = 0 ] || fl_fail "[--readahead off] read_ahead_kb $kb, want 0"
[ "$n" = 16 ] || fl_fail "[--readahead off] 16 reads of 4 KiB missed $n blocks, want 16"
read -r kb n r _ <<<"$(ra_run trace.fh -o readahead=off-page,file_handles)"
[ "$kb" = 0 ] || fl_fail "[-o readahead=off-page] read_ahead_kb $kb, want 0"
[ "$n" = 16 ] || fl_fail "[-o readahead=off-page] missed $n blocks, want 16"
[ "$r" = 128 ] || fl_fail "[-o readahead=off-page] 512 KiB took $r device reads, want 128"
echo "readahead.sh: off, off-page: read_ahead_kb 0, 16 x 4 KiB read 16 blocks; off-page: 512 KiB in 128 device reads"

# the window policies: max_readahead 0 as well (ours is the only
# read-ahead), the READs of one page each then read ahead by the daemon:
# 16 x 4 KiB cold reads are the windows (0,4) (4,8) (12,16) (28,32): 60 blocks
# read ahead, no block missed; with a 64 KiB window (0,2) (2,4) (6,8)
# (14,16) (30,16): 46; adaptive on an image with no device model measures
# no cost, so it reads linux's windows
for pw in linux:60 linux-2013:60 linux:64:46 adaptive:60; do
  p=${pw%:*} want=${pw##*:}
  read -r kb n r a <<<"$(ra_run "$p" --readahead "$p")"
  [ "$kb" = 0 ] || fl_fail "[--readahead $p] read_ahead_kb $kb, want 0"
  [ "$a" = "$want" ] || fl_fail "[--readahead $p] 16 reads of 4 KiB read ahead $a blocks, want $want"
  [ "$n" = 0 ] || fl_fail "[--readahead $p] 16 reads of 4 KiB missed $n blocks, want 0"
  echo "readahead.sh: $p: read_ahead_kb 0, 16 x 4 KiB read ahead $a blocks; 512 KiB in $r device reads"
done

for p in linux:7 oracle adaptive:3 bogus ''; do
  rc=0
  out=$("$UBJ" mount -o "readahead=$p" "$img" "$mnt" 2>&1) || rc=$?
  [ "$rc" = 2 ] || fl_fail "[readahead=$p] exit $rc, want 2 (usage): $out"
  mountpoint -q "$mnt" && fl_fail "[readahead=$p] mounted"
  case $p in
    '') ;;
    bogus) grep -q "bad readahead=bogus.*unknown policy" <<<"$out" || fl_fail "[bogus] $out" ;;
    linux:7 | adaptive:3) grep -q "multiple of 4" <<<"$out" || fl_fail "[$p] $out" ;;
    *) grep -q "needs the future" <<<"$out" || fl_fail "[$p] $out" ;;
  esac
done

# OPEN and RELEASE round trips (the -d traces): by default the first
# OPEN gets ENOSYS (the kernel's no-open mode); with -o file_handles it is
# answered and RELEASE comes
grep -A1 'opcode: OPEN ' "$T/trace.default" | grep -q 'error: -38' ||
  fl_fail "default: OPEN answered $(grep -A1 'opcode: OPEN ' "$T/trace.default" | tail -1)"
grep -A1 'opcode: OPEN ' "$T/trace.fh" | grep -q 'success' ||
  fl_fail "file_handles: OPEN not answered with a file: $(grep -A1 'opcode: OPEN ' "$T/trace.fh" | head -2)"
grep -q 'opcode: RELEASE ' "$T/trace.fh" || fl_fail "file_handles: no RELEASE after the close"
fl_fsck "$img"
echo "readahead.sh: ok"
