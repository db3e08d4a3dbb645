#!/usr/bin/env bash
# fio.sh -- fio jobs that verify every block they wrote (crc32c): random
# 4 KiB writes with fsync, sequential 1 MiB writes, random writes through
# a shared mmap, and random writes over a preallocated (fallocate) file;
# each job re-reads and checks; fsck after the unmount.  In each mode.
. "$(dirname "$0")/fuselib.bash"
fl_need fio
fl_init
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 512M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  cat >"$T/verify.fio" <<JOB
[global]
directory=$mnt
verify=crc32c
do_verify=1
verify_fatal=1
verify_dump=0
verify_state_save=0
size=16m
[randwrite-fsync]
rw=randwrite
bs=4k
fsync=8
fallocate=none
[seqwrite]
rw=write
bs=1m
end_fsync=1
[mmap]
ioengine=mmap
rw=randwrite
bs=8k
[prealloc]
rw=randwrite
bs=16k
fallocate=native
JOB
  fio --output="$T/fio.out" "$T/verify.fio" || fl_fail "[$mode] fio: $(tail -20 "$T/fio.out")"
  grep -q "err= 0" "$T/fio.out" || fl_fail "[$mode] fio: $(cat "$T/fio.out")"
  if grep -E "err= *[1-9]" "$T/fio.out"; then fl_fail "[$mode] fio reported errors"; fi
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img"
  echo "fio.sh: $mode ok"
done
