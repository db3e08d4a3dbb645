#!/usr/bin/env bash
# stressng.sh -- stress-ng's file-system stressors on the mount, one
# instance each for a bounded time (UBJ_FUSE_STRESS_SECS, default 15 s for
# them all): dir, dentry, rename, link, symlink, open, seek, fallocate,
# xattr, chmod, utime, hdd, dirdeep, filename, readahead, fstat.  No
# stressor may fail; fsck after the unmount.  In each mode of fl_modes.
. "$(dirname "$0")/fuselib.bash"
fl_need stress-ng
fl_init
secs=${UBJ_FUSE_STRESS_SECS:-15}
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 1G "$mode"
  fl_mount "$img" "$mnt" "$mode"
  rc=0
  (cd "$mnt" && stress-ng --temp-path "$mnt" --timeout "${secs}s" --metrics-brief \
     --dir 1 --dentry 1 --rename 1 --link 1 --symlink 1 --open 1 --seek 1 \
     --fallocate 1 --fallocate-bytes 64M --xattr 1 --chmod 1 --utime 1 \
     --hdd 1 --hdd-bytes 32M --seek-size 32M --readahead-bytes 32M \
     --dirdeep 1 --filename 1 --readahead 1 --fstat 1 --fstat-dir "$mnt" \
     --verify) >"$T/sng.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fl_fail "[$mode] stress-ng exited $rc: $(grep -iE 'fail|error' "$T/sng.out" | head -20)"
  if grep -q "fail:" "$T/sng.out"; then
    fl_fail "[$mode] stress-ng reported failures: $(grep 'fail:' "$T/sng.out" | head -20)"
  fi
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img"
  echo "stressng.sh: $mode ok"
done
