#!/usr/bin/env bash
# git.sh -- git init, add and commit a copy of this source tree, git fsck
# --full, a clone inside the mount, git gc; fsck of the image after the
# unmount.  In each mode of fl_modes.
. "$(dirname "$0")/fuselib.bash"
fl_need git
fl_init
src=${UBJ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 512M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  mkdir "$mnt/repo"
  cp -r "$src/src" "$src/include" "$src/docs" "$src/tests" "$mnt/repo/"
  export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com
  export GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
  (
    cd "$mnt/repo"
    git init -q
    git add -A
    git commit -q -m "first"
    echo change >>docs/DESIGN.md
    git commit -q -am "second"
    git fsck --full --strict 2>&1
    [ "$(git rev-list --count HEAD)" = 2 ]
    git gc -q
    git fsck --full 2>&1
  ) >"$T/git.out" || fl_fail "[$mode] git: $(tail -5 "$T/git.out")"
  git clone -q "$mnt/repo" "$mnt/clone" || fl_fail "[$mode] git clone"
  diff -r --exclude=.git "$mnt/repo" "$mnt/clone" >/dev/null ||
    fl_fail "[$mode] the clone differs"
  fl_umount "$mnt"
  fl_fsck "$img"
  fl_mount "$img" "$mnt" "$mode"
  (cd "$mnt/clone" && git fsck --full 2>&1 && git status --porcelain) >"$T/git.out" ||
    fl_fail "[$mode] git fsck after a remount: $(tail -5 "$T/git.out")"
  fl_umount "$mnt"
  rm -f "$img"
  echo "git.sh: $mode ok"
done
