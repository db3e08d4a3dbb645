#!/usr/bin/env bash
# postmark.sh -- PostMark (small-file mail-server load: create, delete,
# read, append) on the mount; it must finish its transactions and leave
# no file behind; fsck after the unmount.  A small configuration (the
# benchmark's is in scripts/bench-fuse).  In each mode of fl_modes.
. "$(dirname "$0")/fuselib.bash"
fl_need postmark
fl_init
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 512M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  cat >"$T/pm.cfg" <<CFG
set location $mnt
set number 1000
set transactions 5000
set size 512 16384
set subdirectories 10
set seed 42
run
quit
CFG
  postmark "$T/pm.cfg" >"$T/pm.out" 2>&1 || fl_fail "[$mode] postmark: $(tail -5 "$T/pm.out")"
  grep -q "Creation alone:" "$T/pm.out" || fl_fail "[$mode] postmark did not report"
  grep -q "seconds of transactions" "$T/pm.out" || fl_fail "[$mode] transactions: $(cat "$T/pm.out")"
  left=$(find "$mnt" -mindepth 1 | wc -l)
  [ "$left" = 0 ] || fl_fail "[$mode] postmark left $left entries"
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img"
  echo "postmark.sh: $mode ok ($(grep -A1 'Time:' "$T/pm.out" | tail -1 | xargs))"
done
