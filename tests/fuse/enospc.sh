#!/usr/bin/env bash
# enospc.sh -- a full device through the mount, with and without the
# kernel's writeback cache (src/fuse/fuse.c, "WB"): as on ext4, a writer
# into a full file system gets ENOSPC from write(2) itself (dd must stop
# with "error writing ...: No space left on device", not run on), and every
# byte that write(2) acknowledged reads back -- through the page cache,
# after a remount (from the image), and from a second writer that starts
# on the already full file system; fsck is clean afterwards.
. "$(dirname "$0")/fuselib.bash"
fl_need dd cmp timeout
fl_init
mode=$(fl_modes | awk '{ print $1 }')
head -c $((80 * 1024 * 1024)) /dev/urandom >"$T/pattern"

# dd_fill SRC DST [DD ARGS...] -- write until full: dd must fail in write(2)
# with ENOSPC; ACK = the bytes dd was told were written
dd_fill() {
  local src=$1 dst=$2 rc=0
  shift 2
  timeout 180 dd if="$src" of="$dst" bs=64k "$@" 2>"$T/dd.err" || rc=$?
  [ "$rc" != 124 ] || fl_fail "[$label] dd $dst still running after 180 s (no ENOSPC)"
  [ "$rc" != 0 ] || fl_fail "[$label] dd $dst succeeded on a full file system"
  grep -q "error writing.*No space left on device" "$T/dd.err" ||
    fl_fail "[$label] dd $dst: no ENOSPC from write(2): $(cat "$T/dd.err")"
  ACK=$(awk '/bytes/ && /copied/ { print $1 }' "$T/dd.err" | tail -1)
}

# check_acked FILE BYTES WHAT -- FILE holds the first BYTES of the pattern
check_acked() {
  local size
  size=$(stat -c %s "$1")
  [ "$size" -ge "$2" ] || fl_fail "[$label] $3: $1 has $size bytes, $2 were acknowledged"
  cmp -n "$2" "$T/pattern" "$1" >/dev/null ||
    fl_fail "[$label] $3: $1 differs from what write(2) acknowledged ($2 bytes): $(cmp -n "$2" "$T/pattern" "$1" 2>&1)"
}

# wait_freed MNT -- until half the image is free again.  unlink(2) of
# a file the kernel still knows returns before its blocks are free: the
# daemon holds the inode until the kernel's FORGET and RELEASE
# (src/fuse/fuse.c, R1: its number must not be reused under the
# kernel's feet), which the kernel sends asynchronously after rm
# returns; on a loaded machine the next dd's first write reached the
# daemon first and got ENOSPC ("only 0 bytes fit").  ext4 frees at the
# last close; through FUSE there is no way to, so the test waits for it.
wait_freed() {
  local avail bsize
  for _ in $(seq 300); do
    read -r avail bsize < <(stat -f -c '%a %S' "$1")
    [ $((avail * bsize)) -lt $((32 * 1024 * 1024)) ] || return 0
    sleep 0.1
  done
  fl_fail "[$label] $1: the blocks of a removed file were not free 30 s later ($((avail * bsize)) bytes available)"
}

for wb in writeback_cache no_writeback_cache; do
  label="$mode,$wb"
  img=$T/$wb.img
  mnt=$T/mnt-$wb
  fl_mkfs "$img" 64M "$mode"
  fl_mount "$img" "$mnt" "$mode" -o "$wb"
  dd_fill /dev/zero "$mnt/zero"
  rm -f "$mnt/zero"
  wait_freed "$mnt"
  dd_fill "$T/pattern" "$mnt/data"
  n1=$ACK
  [ "$n1" -gt $((8 * 1024 * 1024)) ] || fl_fail "[$label] only $n1 bytes fit in a 64 MiB image"
  dd_fill "$T/pattern" "$mnt/more" conv=fsync
  n2=$ACK
  check_acked "$mnt/data" "$n1" "through the cache"
  check_acked "$mnt/more" "$n2" "through the cache"
  fl_umount "$mnt"
  fl_fsck "$img"
  fl_mount "$img" "$mnt" "$mode" -o "$wb"
  check_acked "$mnt/data" "$n1" "after a remount"
  check_acked "$mnt/more" "$n2" "after a remount"
  echo "ok [$label]: ENOSPC from write(2); $n1 + $n2 acknowledged bytes read back"
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img"
done
echo "enospc: ok"
