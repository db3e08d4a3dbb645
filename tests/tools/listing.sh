# tests/tools/listing.sh -- `ubjfs ls`, `cat` and `stat` print what is in
# the image: known names, modes, sizes, times (TZ=UTC), symlink targets,
# sorting, -a / -R, contents byte for byte; and their usage errors.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" listing
export TZ=UTC LC_ALL=C
# same WHAT EXPECTED -- $tmp/out must equal EXPECTED
same() {
  local got; got=$(cat "$tmp/out")
  [ "$got" = "$2" ] || fail "$1: got [$got] want [$2]"
}
# line_is NAME EXPECTED -- the long-listing line of NAME (8th field),
# blanks squeezed, must equal EXPECTED
line_is() {
  local got; got=$(tr -s ' ' <"$tmp/out" | awk -v n="$1" '$8 == n')
  [ "$got" = "$2" ] || fail "ls -l line for $1: got [$got] want [$2]"
}

u=$(id -u); g=$(id -g)
k=$tmp/k
mkdir -p "$k/dir/inner"
printf 'hello\n' >"$k/hello.txt"
chmod 0640 "$k/hello.txt"
ln -s hello.txt "$k/link"
: >"$k/.hidden"
printf 'zzz' >"$k/Zeta"
head -c 300000 /dev/urandom >"$k/dir/blob"
for f in "$k/hello.txt" "$k/.hidden" "$k/Zeta" "$k/dir/blob" "$k/dir/inner" "$k/dir" "$k"; do
  touch -d '2020-01-02 03:04:05.123456789' "$f"
done
touch -h -d '2021-06-07 08:09:10' "$k/link"

img=$tmp/l.img
run 0 "$UBJ_TOOL" mkfs --size 16M "$img"
run 0 "$UBJ_TOOL" cp -r "$k" "$img:/k"

# --- ls -----------------------------------------------------------------
run 0 "$UBJ_TOOL" ls "$img:/k"
same "ls" "$(printf 'Zeta\ndir\nhello.txt\nlink')"
run 0 "$UBJ_TOOL" ls -a "$img:/k"
same "ls -a" "$(printf '.\n..\n.hidden\nZeta\ndir\nhello.txt\nlink')"
run 0 "$UBJ_TOOL" ls "$img:/"
same "ls /" "k"
run 0 "$UBJ_TOOL" ls -l "$img:/k"
line_is hello.txt "-rw-r----- 1 $u $g 6 2020-01-02 03:04 hello.txt"
line_is link "lrwxrwxrwx 1 $u $g 9 2021-06-07 08:09 link -> hello.txt"
line_is Zeta "-rw-r--r-- 1 $u $g 3 2020-01-02 03:04 Zeta"
grep -Eq "^drwxr-xr-x +3 +$u +$g +[0-9]+ 2020-01-02 03:04 dir\$" "$tmp/out" ||
  fail "ls -l dir line: $(grep ' dir$' "$tmp/out")"
head -n 1 "$tmp/out" | grep -Eq '^total [0-9]+$' || fail "ls -l: no total line"
[ "$(grep -c . "$tmp/out")" -eq 5 ] || fail "ls -l: $(grep -c . "$tmp/out") lines, want 5"
run 0 "$UBJ_TOOL" ls -l "$img:/k/link"                # the link itself
same "ls -l link" "lrwxrwxrwx 1 $u $g 9 2021-06-07 08:09 $img:/k/link -> hello.txt"
run 0 "$UBJ_TOOL" ls "$img:/k/hello.txt"
same "ls file" "$img:/k/hello.txt"
run 0 "$UBJ_TOOL" ls -R "$img:/k/dir"
same "ls -R" "$(printf '%s\nblob\ninner\n\n%s\n' "$img:/k/dir:" "$img:/k/dir/inner:")"
run 0 "$UBJ_TOOL" ls -l "$img:/k/dir"
line_is blob "-rw-r--r-- 1 $u $g 300000 2020-01-02 03:04 blob"
run 1 "$UBJ_TOOL" ls "$img:/k/nope"
same "ls missing (stdout)" ""
grep -qx "ubjfs ls: $img:/k/nope: No such file or directory" "$tmp/err" ||
  fail "ls missing message: $(cat "$tmp/err")"
run 2 "$UBJ_TOOL" ls "$tmp/not-an-image-path"
run 2 "$UBJ_TOOL" ls -Z "$img:/"
run 2 "$UBJ_TOOL" ls
run 0 "$UBJ_TOOL" ls --help
grep -q "^Usage: ubjfs ls" "$tmp/out" || fail "ls --help"

# --- cat ----------------------------------------------------------------
run 0 "$UBJ_TOOL" cat "$img:/k/hello.txt"
same "cat" "hello"
run 0 "$UBJ_TOOL" cat "$img:/k/link"                  # follows the symlink
same "cat link" "hello"
"$UBJ_TOOL" cat "$img:/k/dir/blob" >"$tmp/blob" 2>"$tmp/err" || fail "cat blob failed"
cmp -s "$tmp/blob" "$k/dir/blob" || fail "cat blob: content differs"
run 0 "$UBJ_TOOL" cat "$img:/k/Zeta" "$img:/k/hello.txt" "$img:/k/Zeta"
same "cat three" "$(printf 'zzzhello\nzzz')"
run 1 "$UBJ_TOOL" cat "$img:/k/dir"
grep -qx "ubjfs cat: $img:/k/dir: Is a directory" "$tmp/err" || fail "cat dir message: $(cat "$tmp/err")"
run 1 "$UBJ_TOOL" cat "$img:/k/missing"
grep -q "No such file or directory" "$tmp/err" || fail "cat missing message"
run 2 "$UBJ_TOOL" cat
run 2 "$UBJ_TOOL" cat "$k/hello.txt"

# --- stat ---------------------------------------------------------------
run 0 "$UBJ_TOOL" stat "$img:/k/hello.txt"
for want in "  File: $img:/k/hello.txt" "  Type: regular file" \
            "Access: 2020-01-02 03:04:05.123456789 +0000" \
            "Modify: 2020-01-02 03:04:05.123456789 +0000"; do
  grep -qxF "$want" "$tmp/out" || fail "stat lacks [$want]: $(cat "$tmp/out")"
done
grep -Eq "^  Size: 6 +Blocks: 8 +IO Block: 4096\$" "$tmp/out" || fail "stat size/blocks line"
grep -Eq "^ Inode: [0-9]+ +Links: 1 +Generation: [0-9]+\$" "$tmp/out" || fail "stat inode line"
grep -Fq "Access: (0640/-rw-r-----)  Uid: $u  Gid: $g" "$tmp/out" || fail "stat mode line"
grep -Eq "^Change: 2[0-9]{3}-" "$tmp/out" || fail "stat change line"
grep -Eq "^ Birth: 2[0-9]{3}-" "$tmp/out" || fail "stat birth line"
ino_file=$(sed -n 's/^ Inode: \([0-9]*\).*/\1/p' "$tmp/out")
run 0 "$UBJ_TOOL" stat "$img:/"
grep -Eq "^ Inode: 1 " "$tmp/out" || fail "stat /: root is not inode 1"
grep -qxF "  Type: directory" "$tmp/out" || fail "stat /: not a directory"
run 0 "$UBJ_TOOL" stat "$img:/k/link"
grep -qxF "  File: $img:/k/link -> hello.txt" "$tmp/out" || fail "stat link: target"
grep -qxF "  Type: symbolic link" "$tmp/out" || fail "stat link: type"
grep -qxF "Modify: 2021-06-07 08:09:10.000000000 +0000" "$tmp/out" || fail "stat link: mtime"
run 0 "$UBJ_TOOL" stat -L "$img:/k/link"
grep -Eq "^ Inode: $ino_file " "$tmp/out" || fail "stat -L does not follow the link"
run 1 "$UBJ_TOOL" stat "$img:/k/none"
grep -qx "ubjfs stat: $img:/k/none: No such file or directory" "$tmp/err" || fail "stat missing message"
run 2 "$UBJ_TOOL" stat
run 0 "$UBJ_TOOL" stat --help

# --- help and version -----------------------------------------------------
run 0 "$UBJ_TOOL" help
for c in mkfs fsck cp ls cat stat inspect bench version; do
  grep -q "^  $c " "$tmp/out" || fail "help does not list $c"
done
run 0 "$UBJ_TOOL" help cp
grep -q "^Usage: ubjfs cp" "$tmp/out" || fail "help cp"
run 0 "$UBJ_TOOL" version
grep -q "^ubjfs [0-9]" "$tmp/out" || fail "version"
run 2 "$UBJ_TOOL" no-such-command
grep -q "^ubjfs: unknown command 'no-such-command'" "$tmp/err" || fail "unknown command message"
run 2 "$UBJ_TOOL"

[ "$fails" -eq 0 ] && echo "tools listing: all checks passed"
exit $((fails > 0))
