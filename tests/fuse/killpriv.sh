#!/usr/bin/env bash
# killpriv.sh -- set-id bits and file capabilities through the mount.  A
# write, a truncate, an fallocate and a chown remove security.capability; a
# write or an fallocate clears S_ISUID (and group-executable S_ISGID); a
# truncate by a caller without CAP_FSETID clears them too (Linux's
# should_remove_suid()).  Checked with
# the frontend taking that job over from the kernel (FUSE_HANDLE_KILLPRIV_V2,
# the default: src/fuse/fuse_io.h) and with -o no_killpriv_v2; and, from
# libfuse's request trace (-d), that the default really stops the kernel's
# GETXATTR of security.capability before every write.
. "$(dirname "$0")/fuselib.bash"
fl_need setcap getcap setpriv
fl_init
img=$T/disk.img
mnt=$T/mnt
"$UBJ" mkfs -q -s 64M "$img"

# caps FILE -- what getcap prints for FILE (empty: no capability)
caps() { getcap "$1" 2>/dev/null | sed 's/^[^ ]* //'; }

# mode FILE -- the permission bits in octal: a statx of the mode alone,
# which the kernel answers from its cached attributes, so a stale mode
# after a write or fallocate that cleared set-id bits shows here (the
# frontend drops that cache: fu_mode_changed)
mode() { stat -c %a "$1"; }

# semantics OPT -- the checks, mounted with -o OPT
semantics() {
  fl_mount "$img" "$mnt" none -o "$1"
  local f=$mnt/f
  echo data >"$f"
  setcap cap_net_raw+ep "$f" || fl_fail "[$1] setcap failed"
  [ -n "$(caps "$f")" ] || fl_fail "[$1] setcap left no capability"
  chmod 6755 "$f"
  stat "$f" >/dev/null                     # the kernel caches the set-id mode
  echo more >>"$f"
  [ "$(mode "$f")" = 755 ] || fl_fail "[$1] a write left mode $(mode "$f"), want 755"
  [ -z "$(caps "$f")" ] || fl_fail "[$1] a write kept the capability: $(caps "$f")"
  setcap cap_net_raw+ep "$f"
  chmod 6755 "$f"
  truncate -s 2 "$f"                       # root, with CAP_FSETID: bits stay
  [ -z "$(caps "$f")" ] || fl_fail "[$1] a truncate kept the capability"
  [ "$(mode "$f")" = 6755 ] || fl_fail "[$1] root's truncate changed the mode to $(mode "$f")"
  setpriv --bounding-set=-fsetid truncate -s 1 "$f"
  [ "$(mode "$f")" = 755 ] ||
    fl_fail "[$1] a truncate without CAP_FSETID left mode $(mode "$f"), want 755"
  chmod 6755 "$f"
  setcap cap_net_raw+ep "$f"
  stat "$f" >/dev/null
  setpriv --bounding-set=-fsetid fallocate -l 1M "$f"
  [ "$(mode "$f")" = 755 ] ||
    fl_fail "[$1] fallocate without CAP_FSETID left mode $(mode "$f"), want 755"
  [ -z "$(caps "$f")" ] || fl_fail "[$1] fallocate kept the capability"
  setcap cap_net_raw+ep "$f"
  chown 1:1 "$f"
  [ -z "$(caps "$f")" ] || fl_fail "[$1] a chown kept the capability"
  fl_umount "$mnt"
  fl_fsck "$img"
  echo "  [$1] write, truncate and chown clear capabilities and set-id bits"
}

# getxattrs OPT -- GETXATTR requests seen while 20 writes go to one file
getxattrs() {
  mkdir -p "$mnt"
  "$UBJ" mount -d -o "$1" "$img" "$mnt" >"$T/trace" 2>&1 &
  local pid=$! i
  for ((i = 0; i < 100; i++)); do
    mountpoint -q "$mnt" && break
    sleep 0.1
  done
  mountpoint -q "$mnt" || fl_fail "the -d mount did not come up: $(head -5 "$T/trace")"
  for ((i = 0; i < 20; i++)); do echo "line $i" >>"$mnt/g"; done
  fusermount3 -u "$mnt"
  wait "$pid" || fl_fail "the -d daemon exited $?"
  grep -c "opcode: GETXATTR" "$T/trace" || true
}

semantics killpriv_v2
semantics no_killpriv_v2
on=$(getxattrs killpriv_v2)
off=$(getxattrs no_killpriv_v2)
[ "$off" -ge 20 ] || fl_fail "without killpriv_v2 the kernel asked only $off times for 20 writes"
[ "$on" -le 2 ] || fl_fail "with killpriv_v2 the kernel still asked $on times for 20 writes"
echo "  GETXATTR requests for 20 appends: $on with killpriv_v2, $off without"
echo "killpriv.sh: ok"
