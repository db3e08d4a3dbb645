# tests/tools/mkfs.sh -- `ubjfs mkfs`: sizes (1M, 64M, 1T sparse), bad
# sizes and flags (exit 2 with a one-line message), never overwriting an
# image or data without --force, the mkfs.ubjfs name, a locked image.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" mkfs
# err_has TEXT -- stderr's first line starts with "ubjfs mkfs: " and has TEXT
err_has() {
  local first; first=$(head -n 1 "$tmp/err")
  case "$first" in
    "ubjfs mkfs: "*"$1"*) ;;
    *) fail "stderr '$first' lacks '$1'";;
  esac
}
# super_magic FILE -- the first 4 bytes as hex
super_magic() { od -An -tx1 -N4 "$1" | tr -d ' \n'; }

img=$tmp/a.img

# --- sizes -------------------------------------------------------------
run 0 "$UBJ_TOOL" mkfs --size 1M "$img"
[ "$(stat -c %s "$img")" -eq 1048576 ] || fail "1M image has $(stat -c %s "$img") bytes"
grep -q "256 blocks" "$tmp/out" || fail "1M summary lacks '256 blocks': $(cat "$tmp/out")"
grep -q "inodes:" "$tmp/out" || fail "summary lacks inodes"
grep -q "uuid:" "$tmp/out" || fail "summary lacks uuid"
[ "$(super_magic "$img")" = 55424a46 ] || fail "no superblock magic in the 1M image"
run 0 "$UBJ_TOOL" inspect "$img"

rm -f "$img"
run 0 "$UBJ_TOOL" mkfs --size 64M --inodes 1000 --label test64 "$img"
[ "$(stat -c %s "$img")" -eq $((64 << 20)) ] || fail "64M image has wrong size"
grep -q "16384 blocks" "$tmp/out" || fail "64M summary lacks '16384 blocks'"
run 0 "$UBJ_TOOL" inspect "$img"
grep -q "label: *test64" "$tmp/out" || fail "inspect does not show the label"
grep -Eq "inodes: +(100[0-9]|10[1-9][0-9])$" "$tmp/out" ||
  fail "inspect: inode count not ~1000: $(grep 'inodes:' "$tmp/out")"

rm -f "$img"
run 0 "$UBJ_TOOL" mkfs --size 65536K "$img"          # same size, K suffix
[ "$(stat -c %s "$img")" -eq $((64 << 20)) ] || fail "65536K image has wrong size"

# 1T: sparse, so the host file system must allow a 1 TiB file
if truncate -s 1T "$tmp/probe" 2>/dev/null; then
  rm -f "$tmp/probe" "$img"
  run 0 "$UBJ_TOOL" mkfs --size 1T "$img"
  [ "$(stat -c %s "$img")" -eq $((1 << 40)) ] || fail "1T image has wrong size"
  used_kib=$(du -k "$img" | cut -f1)
  [ "$used_kib" -lt $((128 * 1024)) ] || fail "1T image is not sparse: du says ${used_kib} KiB"
  grep -q "268435456 blocks" "$tmp/out" || fail "1T summary lacks the block count"
  run 0 "$UBJ_TOOL" inspect "$img"
  grep -q "mount: *ok" "$tmp/out" || fail "1T image does not mount: $(cat "$tmp/err")"
else
  echo "note: host file system refuses a 1 TiB sparse file; 1T case skipped"
fi
rm -f "$img"

# --- bad sizes and flags: exit 2, one line, nothing created ---------------
for bad in "--size 512K" "--size 0" "--size 10X" "--size 1.5G" "--size -1M" \
           "--size 12345678901234567890" "--size 99999999999999T" "--size 8P" \
           "--inodes 0 --size 1M" "--inodes abc --size 1M" "--bogus" \
           "--mode no-such-mode --size 1M" \
           "--label 0123456789abcdef0123456789abcdef --size 1M"; do
  # shellcheck disable=SC2086
  run 2 "$UBJ_TOOL" mkfs $bad "$img"
  head -n 1 "$tmp/err" | grep -q "^ubjfs mkfs: " || fail "mkfs $bad: message '$(head -n 1 "$tmp/err")'"
  [ -e "$img" ] && { fail "mkfs $bad created the image"; rm -f "$img"; }
done
run 2 "$UBJ_TOOL" mkfs --size 1M
err_has "missing IMAGE"
run 2 "$UBJ_TOOL" mkfs --size 1M "$img" "$tmp/other.img"
run 1 "$UBJ_TOOL" mkfs "$img"                        # new file needs --size
err_has "give --size"
[ -e "$img" ] && fail "mkfs without --size created the image"
run 1 "$UBJ_TOOL" mkfs --size 1M "$tmp"              # a directory
run 0 "$UBJ_TOOL" mkfs --help
grep -q "^Usage: ubjfs mkfs" "$tmp/out" || fail "mkfs --help has no usage line"
grep -q "Exit status" "$tmp/out" || fail "mkfs --help has no exit status"

# --- never overwrite without --force --------------------------------------
run 0 "$UBJ_TOOL" mkfs --size 2M "$img"
uuid1=$(grep uuid: "$tmp/out")
run 1 "$UBJ_TOOL" mkfs "$img"
err_has "already holds a ubjfs file system"
run 1 "$UBJ_TOOL" mkfs --size 4M "$img"
err_has "--force"
[ "$(stat -c %s "$img")" -eq $((2 << 20)) ] || fail "refused mkfs changed the size"
run 0 "$UBJ_TOOL" inspect "$img"
grep -q "${uuid1#*uuid:}" "$tmp/out" || fail "refused mkfs changed the uuid"
run 0 "$UBJ_TOOL" mkfs --force "$img"                # keeps the size
[ "$(stat -c %s "$img")" -eq $((2 << 20)) ] || fail "--force without --size changed the size"
[ "$(grep uuid: "$tmp/out")" != "$uuid1" ] || fail "--force did not make a new file system"
run 0 "$UBJ_TOOL" mkfs --force --size 3M "$img"      # truncated, resized
[ "$(stat -c %s "$img")" -eq $((3 << 20)) ] || fail "--force --size did not resize"

# data that is not ubjfs
data=$tmp/data.bin
printf 'precious user data' > "$data"
truncate -s 2M "$data"
run 1 "$UBJ_TOOL" mkfs "$data"
err_has "holds data"
[ "$(head -c 18 "$data")" = "precious user data" ] || fail "mkfs overwrote user data"
run 1 "$UBJ_TOOL" mkfs --size 2M "$data"
[ "$(head -c 18 "$data")" = "precious user data" ] || fail "mkfs --size overwrote user data"

# data past a zero first block (and past a hole) is found too
late=$tmp/late.bin
truncate -s 3M "$late"
printf 'data behind a hole' | dd of="$late" bs=1 seek=$((2 << 20)) conv=notrunc status=none
sum=$(md5sum < "$late")
run 1 "$UBJ_TOOL" mkfs "$late"
err_has "holds data"
[ "$(md5sum < "$late")" = "$sum" ] || fail "mkfs overwrote data behind a zero first block"

# an existing all-zero file is used as it is; a short one is refused
zero=$tmp/zero.img
truncate -s 3M "$zero"
run 0 "$UBJ_TOOL" mkfs "$zero"
[ "$(stat -c %s "$zero")" -eq $((3 << 20)) ] || fail "zero file resized"
small=$tmp/small.img
truncate -s 64K "$small"
run 1 "$UBJ_TOOL" mkfs "$small"
err_has "at least 1M"

# --- the mkfs.ubjfs name (a symlink in the build directory) ---------------
alias_bin=$(dirname "$UBJ_TOOL")/mkfs.ubjfs
if [ -x "$alias_bin" ]; then
  rm -f "$img"
  run 0 "$alias_bin" --size 1M "$img"
  [ "$(super_magic "$img")" = 55424a46 ] || fail "mkfs.ubjfs made no file system"
  run 2 "$alias_bin" --size 1Q "$img"
  head -n 1 "$tmp/err" | grep -q "^mkfs.ubjfs: " || fail "mkfs.ubjfs message prefix: $(cat "$tmp/err")"
else
  fail "no mkfs.ubjfs next to $UBJ_TOOL"
fi

# --- a locked (in use) image is refused ------------------------------------
if command -v flock >/dev/null; then
  flock "$img" sleep 5 &
  locker=$!
  sleep 0.5
  run 1 "$UBJ_TOOL" mkfs --force "$img"
  err_has "in use"
  kill "$locker" 2>/dev/null || true
  wait "$locker" 2>/dev/null || true     # killed: 143
else
  skip_part "a locked image (flock is not installed)"
fi

[ "$fails" -eq 0 ] && echo "tools mkfs: all checks passed"
exit $((fails > 0))
