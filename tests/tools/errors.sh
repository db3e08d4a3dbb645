# tests/tools/errors.sh -- bad images get one-line errors, never a crash:
# `inspect` on a zeroed block 0, a truncated image and randomly corrupted
# superblocks; `fsck` exit codes (0 clean, 8 on a non-image or missing
# file, 16 usage) and the fsck.ubjfs name; ls/cat/stat/cp on an image
# that does not mount; the mount helper form with a missing image.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" errors
# one_line PREFIX -- stderr is exactly one line starting with PREFIX
one_line() {
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "want one error line, got: $(cat "$tmp/err")"
  head -n 1 "$tmp/err" | grep -q "^$1" || fail "error line lacks '$1': $(cat "$tmp/err")"
}

good=$tmp/good.img
run 0 "$UBJ_TOOL" mkfs --size 8M "$good"
printf 'data\n' >"$tmp/f"
run 0 "$UBJ_TOOL" cp "$tmp/f" "$good:/f"

# --- fsck exit codes ---------------------------------------------------------
run 0 "$UBJ_TOOL" fsck "$good"                       # default -n
run 0 "$UBJ_TOOL" fsck -n "$good"
run 0 "$UBJ_TOOL" fsck -n -v "$good"
grep -q "clean" "$tmp/out" || fail "fsck -v does not say clean: $(cat "$tmp/out")"
run 0 "$UBJ_TOOL" fsck -y "$good"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$tmp/random.bin"
run 8 "$UBJ_TOOL" fsck -n "$tmp/random.bin"                 # not an image
grep -q "^ubjfs fsck: " "$tmp/err" || fail "fsck non-image: no 'ubjfs fsck:' line: $(cat "$tmp/err")"
truncate -s 4M "$tmp/zeros.bin"
run 8 "$UBJ_TOOL" fsck "$tmp/zeros.bin"
run 8 "$UBJ_TOOL" fsck -n "$tmp/no-such.img"
grep -q "No such file or directory" "$tmp/err" || fail "fsck missing file message"
run 8 "$UBJ_TOOL" fsck -n "$tmp"                            # a directory
run 16 "$UBJ_TOOL" fsck -n -y "$good"
run 16 "$UBJ_TOOL" fsck
run 16 "$UBJ_TOOL" fsck --bogus "$good"
run 0 "$UBJ_TOOL" fsck --help
grep -q "Exit status" "$tmp/out" || fail "fsck --help lacks the exit status"
alias_bin=$(dirname "$UBJ_TOOL")/fsck.ubjfs
if [ -x "$alias_bin" ]; then
  run 0 "$alias_bin" -n "$good"
  run 8 "$alias_bin" -n "$tmp/random.bin"
else
  fail "no fsck.ubjfs next to $UBJ_TOOL"
fi

# --- the mount helper form (mount.fuse3's `ubjfs IMAGE DIR -o OPTS`): a
# missing image gets the mount's error, not "unknown command" --------------
mkdir -p "$tmp/mnt"
run 1 "$UBJ_TOOL" "$tmp/no-such.img" "$tmp/mnt"
one_line "ubjfs mount: $tmp/no-such.img: No such file or directory"
run 1 "$UBJ_TOOL" no-such.img "$tmp/mnt" -o rw
one_line "ubjfs mount: no-such.img: No such file or directory"
run 2 "$UBJ_TOOL" frobnicate "$tmp/mnt"                # a mistyped command
grep -q "unknown command 'frobnicate'" "$tmp/err" || fail "mistyped command: $(cat "$tmp/err")"

# --- inspect: a zeroed superblock -------------------------------------------
z=$tmp/zeroed.img
cp "$good" "$z"
dd if=/dev/zero of="$z" bs=4096 count=1 conv=notrunc status=none
run 1 "$UBJ_TOOL" inspect "$z"
one_line "ubjfs inspect: $z: no ubjfs superblock"
grep -q "^image: .*2048 blocks" "$tmp/out" || fail "inspect does not report the device size"
run 8 "$UBJ_TOOL" fsck -n "$z"
for cmd in "ls $z:/" "cat $z:/f" "stat $z:/f"; do
  # shellcheck disable=SC2086
  run 1 "$UBJ_TOOL" $cmd
  one_line "ubjfs ${cmd%% *}: $z: cannot mount: "
done
run 1 "$UBJ_TOOL" cp "$tmp/f" "$z:/g"
one_line "ubjfs cp: $z: cannot mount: "
[ "$(od -An -tx1 -N16 "$z" | tr -d ' \n')" = 00000000000000000000000000000000 ] ||
  fail "a failed cp wrote to the corrupt image"

# --- inspect: a truncated image ----------------------------------------------
tr_img=$tmp/trunc.img
cp "$good" "$tr_img"
truncate -s 1M "$tr_img"
run 1 "$UBJ_TOOL" inspect "$tr_img"
grep -q "truncated image" "$tmp/err" || fail "inspect truncated: $(cat "$tmp/err")"
grep -q "^superblock:" "$tmp/out" || fail "inspect truncated: no superblock fields"

# --- inspect: a clean image is sound ------------------------------------------
run 0 "$UBJ_TOOL" inspect "$good"
for want in "^superblock:" "^layout:" "^allocation:" "^mount: *ok" "magic: *0x464a4255" \
            "blocks (bitmap)" "inodes (bitmap)" "state: *clean"; do
  grep -q "$want" "$tmp/out" || fail "inspect lacks '$want'"
done

# --- random corruption of the superblock and bitmaps: never a crash -------------
c=$tmp/corrupt.img
seed=12345
for i in $(seq 1 25); do
  cp "$good" "$c"
  seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
  off=$(( 4 + seed % 12284 ))                # keep the magic: past it, blocks 0..2
  len=$(( 1 + (seed / 7) % 64 ))
  head -c "$len" /dev/urandom | dd of="$c" bs=1 seek="$off" conv=notrunc status=none
  rc=0
  "$UBJ_TOOL" inspect "$c" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -le 1 ] || fail "inspect crashed (exit $rc) on corruption at $off+$len: $(tail -c 300 "$tmp/err")"
  grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err" && fail "inspect: sanitizer report at $off+$len"
  rc=0
  "$UBJ_TOOL" fsck -n "$c" >"$tmp/out" 2>"$tmp/err" || rc=$?
  case $rc in 0|4|8) ;; *) fail "fsck -n exit $rc on corruption at $off+$len";; esac
  grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err" && fail "fsck: sanitizer report at $off+$len"
done

# --- usage errors ---------------------------------------------------------
run 2 "$UBJ_TOOL" inspect
run 2 "$UBJ_TOOL" inspect "$good" extra
run 1 "$UBJ_TOOL" inspect "$tmp/no-such.img"
one_line "ubjfs inspect: "

[ "$fails" -eq 0 ] && echo "tools errors: all checks passed"
exit $((fails > 0))
