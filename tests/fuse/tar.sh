#!/usr/bin/env bash
# tar.sh -- extract a tar of a real tree (/usr/include without its largest
# vendored subtrees, or $UBJ_FUSE_TREE) onto the mount and compare it with
# diff -r against the same archive extracted on the host; archive it again
# from the mount; unmount, fsck, remount and compare once more.  In each
# mode of fl_modes.
. "$(dirname "$0")/fuselib.bash"
fl_need tar diff
fl_init
tree=${UBJ_FUSE_TREE:-/usr/include}
[ -d "$tree" ] || fl_skip "$tree does not exist"
# the biggest vendored subtrees are left out to keep the test short
tar -C "$(dirname "$tree")" --exclude='node' --exclude='llvm-*' --exclude='clang*' \
    -cf "$T/tree.tar" "$(basename "$tree")"
mkdir "$T/ref"
tar -C "$T/ref" -xf "$T/tree.tar"
ref=$T/ref/$(basename "$tree")
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 1G "$mode"
  fl_mount "$img" "$mnt" "$mode"
  tar -C "$mnt" -xf "$T/tree.tar"
  diff -r --no-dereference "$ref" "$mnt/$(basename "$tree")" >"$T/diff" ||
    fl_fail "[$mode] extracted tree differs: $(head -5 "$T/diff")"
  tar -C "$mnt" -cf "$T/again.tar" "$(basename "$tree")"
  [ "$(tar -tvf "$T/tree.tar" | sort)" = "$(tar -tvf "$T/again.tar" | sort)" ] ||
    fl_fail "[$mode] archive of the mount lists differently"
  fl_umount "$mnt"
  fl_fsck "$img"
  fl_mount "$img" "$mnt" "$mode"
  diff -r --no-dereference "$ref" "$mnt/$(basename "$tree")" >"$T/diff" ||
    fl_fail "[$mode] tree differs after a remount: $(head -5 "$T/diff")"
  rm -rf "${mnt:?}/$(basename "$tree")"
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img" "$T/again.tar"
  echo "tar.sh: $mode ok"
done
