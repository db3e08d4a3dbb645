# tests/tools/roundtrip.sh -- the issue's round trip: mkfs a 1 GiB image,
# `cp -r` the project's src/ and docs/ in, `fsck -n` clean (exit 0), `cp -r`
# them back out, `diff -r` finds nothing, modes and mtimes preserved.  Plus
# a tree of awkward files: hard links, symlinks (dangling too), a FIFO, a
# sparse file, a multi-MiB file, set-uid and read-only modes, ns times,
# ownership when root; and cp's target rules and errors.
# Run by CTest with bash; UBJ_TOOL, UBJ_SRC.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" roundtrip
: "${UBJ_SRC:?UBJ_SRC must name the source tree}"
# attrs DIR [MINDEPTH] -- "type mode mtime size path" of everything under DIR, sorted
attrs() { (cd "$1" && find . -mindepth "${2:-0}" -printf '%y %m %T@ %s %p\n' | LC_ALL=C sort); }

img=$tmp/rt.img
run 0 "$UBJ_TOOL" mkfs --size 1G "$img"

# --- the project's own sources (a snapshot: others may be editing) --------
snap=$tmp/snap
mkdir -p "$snap"
cp -a "$UBJ_SRC/src" "$UBJ_SRC/docs" "$snap/" || { echo "cannot snapshot $UBJ_SRC"; exit 1; }
run 0 "$UBJ_TOOL" cp -r "$snap/src" "$snap/docs" "$img:/"
run 0 "$UBJ_TOOL" fsck -n "$img"
out=$tmp/out.d
mkdir "$out"
run 0 "$UBJ_TOOL" cp -r "$img:/src" "$img:/docs" "$out"
diff -r "$snap" "$out" >"$tmp/diff" 2>&1 || fail "diff -r differs: $(head -c 600 "$tmp/diff")"
attrs "$snap" 1 >"$tmp/a1"     # "." itself: $out was made by mkdir
attrs "$out" 1 >"$tmp/a2"
cmp -s "$tmp/a1" "$tmp/a2" || fail "modes/mtimes differ: $(diff "$tmp/a1" "$tmp/a2" | head -n 6)"
n=$(wc -l <"$tmp/a1")
[ "$n" -gt 20 ] || fail "only $n entries in the source snapshot"
( cd "$snap" && find . -mindepth 1 -exec stat -c '%a %Y %n' {} + | LC_ALL=C sort ) >"$tmp/s1"
( cd "$out" && find . -mindepth 1 -exec stat -c '%a %Y %n' {} + | LC_ALL=C sort ) >"$tmp/s2"
cmp -s "$tmp/s1" "$tmp/s2" || fail "stat -c '%a %Y' differs"

# --- awkward files ----------------------------------------------------------
t=$tmp/t
mkdir -p "$t/sub/deep" "$t/empty"
printf 'hello\n' >"$t/a"
ln "$t/a" "$t/sub/a2"                       # hard link
ln -s ../a "$t/sub/sym"                     # relative symlink
ln -s /no/such/target "$t/dangling"         # dangling symlink
mkfifo "$t/fifo"
truncate -s 10M "$t/sparse" && printf 'end' >>"$t/sparse"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$t/big"
chmod 4755 "$t/big"
printf 'ro\n' >"$t/sub/deep/ro" && chmod 0444 "$t/sub/deep/ro"
chmod 0555 "$t/sub/deep"
: >"$t/emptyfile"
touch -d '2001-02-03 04:05:06.123456789' "$t/a"
touch -a -d '2003-03-03 03:03:03.333333333' "$t/emptyfile"
touch -m -d '2004-04-04 04:04:04.444444444' "$t/emptyfile"
touch -h -d '2002-01-01 00:00:00.5' "$t/sub/sym"
want_atime=$(stat -c %X "$t/emptyfile")
if [ "$(id -u)" -eq 0 ]; then chown 1234:5678 "$t/sub/a2"; fi
attrs "$t" >"$tmp/t1"

run 0 "$UBJ_TOOL" cp -r "$t" "$img:/t"            # new name: /t
run 0 "$UBJ_TOOL" fsck -n "$img"
run 0 "$UBJ_TOOL" cp -r "$img:/t" "$tmp/t.out"    # new name again
attrs "$tmp/t.out" >"$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" || fail "awkward tree differs: $(diff "$tmp/t1" "$tmp/t2" | head -n 8)"
cmp -s "$t/big" "$tmp/t.out/big" || fail "big file content differs"
cmp -s "$t/sparse" "$tmp/t.out/sparse" || fail "sparse file content differs"
[ "$(stat -c %i "$tmp/t.out/a")" = "$(stat -c %i "$tmp/t.out/sub/a2")" ] ||
  fail "hard link not preserved"
[ "$(readlink "$tmp/t.out/dangling")" = /no/such/target ] || fail "dangling symlink target"
[ "$(readlink "$tmp/t.out/sub/sym")" = ../a ] || fail "symlink target"
[ -p "$tmp/t.out/fifo" ] || fail "fifo not a fifo"
[ "$(stat -c %y "$tmp/t.out/a")" = "$(stat -c %y "$t/a")" ] || fail "ns mtime not preserved"
[ "$(stat -c %y "$tmp/t.out/sub/sym")" = "$(stat -c %y "$t/sub/sym")" ] || fail "symlink mtime"
[ "$(stat -c %X "$tmp/t.out/emptyfile")" = "$want_atime" ] || fail "atime not preserved"
sparse_kib=$(du -k "$tmp/t.out/sparse" | cut -f1)
[ "$sparse_kib" -lt 1024 ] || fail "sparse file written dense (${sparse_kib} KiB)"
if [ "$(id -u)" -eq 0 ]; then
  [ "$(stat -c %u:%g "$tmp/t.out/sub/a2")" = 1234:5678 ] || fail "owner not preserved as root"
fi

# --- cp's target rules ------------------------------------------------------
mkdir "$tmp/into"
run 0 "$UBJ_TOOL" cp "$img:/t/a" "$tmp/into"          # into a directory
[ "$(cat "$tmp/into/a")" = hello ] || fail "cp into a host directory"
run 0 "$UBJ_TOOL" cp "$img:/t/a" "$tmp/into/renamed"  # a new name
[ "$(cat "$tmp/into/renamed")" = hello ] || fail "cp to a new host name"
printf 'new\n' >"$tmp/new"
run 0 "$UBJ_TOOL" cp "$tmp/new" "$img:/t/a"           # overwrite (keeps the inode)
run 0 "$UBJ_TOOL" cat "$img:/t/sub/a2"
[ "$(cat "$tmp/out")" = new ] || fail "overwrite did not write through the hard link"
run 0 "$UBJ_TOOL" cp "$tmp/new" "$tmp/into/renamed" "$img:/t/sub"   # several into a dir
run 0 "$UBJ_TOOL" ls "$img:/t/sub"
grep -qx new "$tmp/out" && grep -qx renamed "$tmp/out" || fail "several files into a directory"
run 0 "$UBJ_TOOL" cp -r "$t" "$img:/t"                # existing dir: goes inside
run 0 "$UBJ_TOOL" ls "$img:/t/t/sub"
grep -qx sym "$tmp/out" || fail "cp -r into an existing directory"
run 0 "$UBJ_TOOL" fsck -n "$img"

# --- errors: one line each, exit 1 or 2, the image untouched ---------------
run 1 "$UBJ_TOOL" cp "$tmp/no-such-file" "$img:/"
grep -q "^ubjfs cp: .*no-such-file: No such file or directory$" "$tmp/err" || fail "missing source message: $(cat "$tmp/err")"
run 1 "$UBJ_TOOL" cp "$t" "$img:/x"
grep -q "omitting directory" "$tmp/err" || fail "directory without -r message"
run 1 "$UBJ_TOOL" cp "$tmp/new" "$img:/no/such/dir/f"
grep -q "No such file or directory" "$tmp/err" || fail "missing image dir message"
run 1 "$UBJ_TOOL" cp "$tmp/new" "$t/a" "$img:/t/a"
grep -q "is not a directory" "$tmp/err" || fail "several sources to a file"
run 2 "$UBJ_TOOL" cp "$img:/t/a" "$img:/t/b"
grep -q "not supported" "$tmp/err" || fail "image-to-image message"
run 2 "$UBJ_TOOL" cp "$tmp/new" "$tmp/new2"
run 2 "$UBJ_TOOL" cp "$tmp/new"
run 2 "$UBJ_TOOL" cp --bogus "$tmp/new" "$img:/"
run 1 "$UBJ_TOOL" cp "$tmp/new" "$tmp/nonexistent.img:/x"
grep -q "nonexistent.img: No such file or directory" "$tmp/err" || fail "missing image message: $(cat "$tmp/err")"
run 1 "$UBJ_TOOL" cp "$img:/t/a" "$img"                # never over the image
grep -q "image itself" "$tmp/err" || fail "copy over the image itself"
run 0 "$UBJ_TOOL" fsck -n "$img"
run 0 "$UBJ_TOOL" cp --help
grep -q "^Usage: ubjfs cp" "$tmp/out" || fail "cp --help"

[ "$fails" -eq 0 ] && echo "tools roundtrip: all checks passed"
exit $((fails > 0))
