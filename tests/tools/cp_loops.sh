# tests/tools/cp_loops.sh -- `ubjfs cp -r` and directory loops (issue 14,
# defect 2).  A corrupt image whose directory entry names an ancestor (the
# checksums resealed, so only the tree's shape is wrong) is copied out:
# cp reports the loop in one line naming the path, exits 1, and copies
# every other entry once.  On the host side cp -r behaves as cp(1) -r
# without -L: a symlink to an ancestor (or to /) is copied as a symlink,
# never followed.
#
# Fails on fd8c42e: `cp -r IMG:/t/a out` recursed through a/b/up ->
# a until ENAMETOOLONG (2457 directories made; exit 1 only from that), and
# `cp -r IMG:/t/r out` (r -> the root) was still copying when a 10 s
# timeout killed it (23621 entries, 93 MB: it runs until the disk fills).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" cp_loops
fail() { echo "FAIL: $*"; exit 1; }     # stop at the first failure
command -v python3 >/dev/null || test_skip "python3 is needed to corrupt the image"
relink=$(dirname "$0")/dirent_relink.py
ino_of() { "$UBJ_TOOL" stat "$1" | sed -n 's/.*Inode: \([0-9]*\).*/\1/p'; }

src=$tmp/src
mkdir -p "$src/a/b/up" "$src/r" "$src/c"
printf 'f\n' >"$src/a/f"
printf 'g\n' >"$src/a/b/g"
printf 'h\n' >"$src/c/h"
img=$tmp/loop.img
run 0 "$UBJ_TOOL" mkfs -q --size 16M "$img"
run 0 "$UBJ_TOOL" cp -r "$src" "$img:/t"
a=$(ino_of "$img:/t/a"); [ -n "$a" ] || fail "no inode number for /t/a"
python3 "$relink" "$img" up "$a" || fail "could not relink a/b/up to a"
python3 "$relink" "$img" r 1 || fail "could not relink r to the root"
run 1 "$UBJ_TOOL" ls -R "$img:/t"          # the image really has the loops
grep -q "directory loop" "$tmp/err" || fail "ls -R sees no loop: $(cat "$tmp/err")"

# --- a two-directory loop: /t/a/b/up is /t/a -----------------------------
out=$tmp/out1
run 1 timeout 20 "$UBJ_TOOL" cp -r "$img:/t/a" "$out"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "two-directory loop: want one line, got: $(head -c 600 "$tmp/err")"
grep -qx "ubjfs cp: $img:/t/a/b/up: directory loop (it is its own ancestor, 2 levels up); not copied" \
  "$tmp/err" || fail "two-directory loop message: $(cat "$tmp/err")"
[ "$(cd "$out" && find . | sort | tr '\n' ' ')" = ". ./b ./b/g ./f " ] ||
  fail "two-directory loop copied: $(cd "$out" && find . | head -20 | tr '\n' ' ')"
[ "$(cat "$out/b/g")" = g ] || fail "b/g content"

# --- an entry naming the root: /t/r is / --------------------------------
out=$tmp/out2
run 1 timeout 20 "$UBJ_TOOL" cp -r "$img:/t" "$out"
[ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "root loop: want two lines, got: $(head -c 600 "$tmp/err")"
grep -qx "ubjfs cp: $img:/t/a/b/up: directory loop (it is its own ancestor, 2 levels up); not copied" \
  "$tmp/err" || fail "root loop: a/b/up message: $(cat "$tmp/err")"
grep -qx "ubjfs cp: $img:/t/r/t: directory loop (it is its own ancestor, 2 levels up); not copied" \
  "$tmp/err" || fail "root loop: r/t message: $(cat "$tmp/err")"
[ "$(cd "$out" && find . | wc -l)" -eq 8 ] ||
  fail "root loop copied: $(cd "$out" && find . | head -20 | tr '\n' ' ')"
[ -d "$out/r" ] && [ ! -e "$out/r/t" ] || fail "r (the root) copied into itself"

# --- the whole image: the loop through the root is met at /t/r ----------
out=$tmp/out3; mkdir "$out"
run 1 timeout 20 "$UBJ_TOOL" cp -r "$img:/" "$out"
grep -q "^ubjfs cp: $img:/t/r: directory loop" "$tmp/err" ||
  fail "IMAGE:/ copy: $(head -c 600 "$tmp/err")"
[ -f "$out/t/c/h" ] || fail "IMAGE:/ copy lost t/c/h"

# --- host side: symlinks to ancestors are copied as symlinks ------------
h=$tmp/host
mkdir -p "$h/d/e"
ln -s .. "$h/d/e/up"
ln -s / "$h/d/root"
ln -s "$h" "$h/d/e/abs"
img2=$tmp/in.img
run 0 "$UBJ_TOOL" mkfs -q --size 16M "$img2"
run 0 timeout 20 "$UBJ_TOOL" cp -r "$h" "$img2:/h"
[ ! -s "$tmp/err" ] || fail "copy in: $(head -c 600 "$tmp/err")"
run 0 "$UBJ_TOOL" ls -R "$img2:/h"
[ "$(grep -c . "$tmp/out")" -eq 8 ] || fail "copy in made: $(cat "$tmp/out")"
for l in d/e/up:.. d/root:/ "d/e/abs:$h"; do
  run 0 "$UBJ_TOOL" ls -l "$img2:/h/${l%%:*}"
  grep -q -- "-> ${l#*:}\$" "$tmp/out" || fail "symlink ${l%%:*}: $(cat "$tmp/out")"
done
# and back out: still symlinks, still not followed
out=$tmp/out4
run 0 timeout 20 "$UBJ_TOOL" cp -r "$img2:/h" "$out"
[ "$(readlink "$out/d/e/up")" = .. ] && [ "$(readlink "$out/d/root")" = / ] ||
  fail "copy out of symlinks"
[ "$(find "$out" | wc -l)" -eq 6 ] || fail "copy out made: $(find "$out" | head)"

echo "tools cp_loops: all checks passed"
