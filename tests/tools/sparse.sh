# tests/tools/sparse.sh -- sparse files cost their data, not their size
# (issue 14, defect 6).  A 4 TiB host file holding 164 KiB of data (a hole
# at its start, data in the middle, 3 bytes at its very end) is copied into
# an image, back out, and written out by `ubjfs cat` to a regular file and
# to /dev/null, each within a few seconds: holes are found with
# ubj_seek_data / ubj_seek_hole (and the host's SEEK_DATA) and never read,
# and stay holes (`stat -c %b` of the copies).  A smaller sparse file
# through a pipe (`cat | cmp`) gets every zero.
#
# Fails on fd8c42e: `ubjfs cp IMG:/big out` read all 4 TiB (ubj_pread +
# a zero test of every 4 KiB block: 1.25 s per 20 GiB here, so about
# 4 minutes) and was killed by the 30 s timeout; `ubjfs cat IMG:/big
# >/dev/null` likewise (0.66 s per 20 GiB).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" sparse
fail() { echo "FAIL: $*"; exit 1; }     # stop at the first failure
set -o pipefail                         # `ubjfs cat | cmp` fails if cat does
command -v python3 >/dev/null || test_skip "python3 is needed (sparse_cmp.py)"
scmp=$(dirname "$0")/sparse_cmp.py
T4=$((4 << 40))
big=$tmp/big
truncate -s "$T4" "$big" 2>/dev/null || test_skip_fact "$tmp cannot hold a 4 TiB sparse file"
head -c 65536 /dev/urandom | dd of="$big" bs=1M seek=1024 conv=notrunc status=none
head -c 100000 /dev/urandom | dd of="$big" bs=1 seek=$((2 << 40 | 123)) conv=notrunc status=none
printf end | dd of="$big" bs=1 seek=$((T4 - 3)) conv=notrunc status=none
python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); sys.exit(os.lseek(fd,0,os.SEEK_DATA)!=1<<30)' "$big" ||
  test_skip_fact "$tmp has no SEEK_DATA"
[ "$(stat -c %b "$big")" -lt 2048 ] || test_skip_fact "$tmp does not keep holes"

# timed LIMIT WHAT CMD... -- CMD exits 0 within LIMIT seconds
timed() {
  local limit=$1 what=$2 t0 t1; shift 2
  t0=$(date +%s%N)
  run 0 timeout 30 "$@"
  t1=$(date +%s%N)
  [ $(((t1 - t0) / 1000000)) -le $((limit * 1000)) ] ||
    fail "$what took $(((t1 - t0) / 1000000)) ms (limit ${limit} s)"
  echo "$what: $(((t1 - t0) / 1000000)) ms"
}

img=$tmp/s.img
run 0 "$UBJ_TOOL" mkfs -q --size 64M "$img"
timed 5 "cp in (4 TiB sparse)" "$UBJ_TOOL" cp "$big" "$img:/big"
run 0 "$UBJ_TOOL" stat "$img:/big"
grep -q "Size: $T4 " "$tmp/out" || fail "size in the image: $(head -3 "$tmp/out")"
blocks=$(sed -n 's/.*Blocks: \([0-9]*\).*/\1/p' "$tmp/out")
[ "$blocks" -lt 2048 ] || fail "holes filled in the image: $blocks blocks"

timed 5 "cp out" "$UBJ_TOOL" cp "$img:/big" "$tmp/out.big"
[ "$(stat -c %s "$tmp/out.big")" = "$T4" ] || fail "cp out: size"
[ "$(stat -c %b "$tmp/out.big")" -lt 2048 ] || fail "cp out: holes filled ($(stat -c %b "$tmp/out.big") blocks)"
python3 "$scmp" "$big" "$tmp/out.big" || fail "cp out: contents differ"
rm -f "$tmp/out.big"

timed 5 "cat > file" "$UBJ_TOOL" cat "$img:/big"    # run's stdout: $tmp/out
[ "$(stat -c %s "$tmp/out")" = "$T4" ] || fail "cat > file: size $(stat -c %s "$tmp/out")"
[ "$(stat -c %b "$tmp/out")" -lt 2048 ] || fail "cat > file: holes written ($(stat -c %b "$tmp/out") blocks)"
python3 "$scmp" "$big" "$tmp/out" || fail "cat > file: contents differ"
: >"$tmp/out"
# an ASan build checks every write()'s 64 MiB buffer against its shadow
# memory, at the machine's memory bandwidth: 4 TiB took 23 s in one CI's
# ASan pass and 110 s on another machine (0.2 s without ASan) -- so an
# ASan build cats a 64 GiB sparse file instead, its limit a hang guard
# only; the gcc and clang passes keep the 4 TiB check against fd8c42e's
# per-block reads (135 s without ASan)
dn_limit=10 dn_file=big dn_what="4 TiB"
if asan_build; then
  dn_limit=90 dn_file=big64 dn_what="64 GiB (ASan build)"
  truncate -s 64G "$tmp/big64"
  printf end | dd of="$tmp/big64" bs=1 seek=$(((64 << 30) - 3)) conv=notrunc status=none
  run 0 "$UBJ_TOOL" cp "$tmp/big64" "$img:/big64"
  rm -f "$tmp/big64"
fi
t0=$(date +%s%N)
timeout $((dn_limit * 3)) "$UBJ_TOOL" cat "$img:/$dn_file" >/dev/null ||
  fail "cat >/dev/null failed or timed out"
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -le $((dn_limit * 1000)) ] ||
  fail "cat >/dev/null took $(((t1 - t0) / 1000000)) ms (limit $dn_limit s)"
echo "cat of $dn_what to /dev/null: $(((t1 - t0) / 1000000)) ms"

# every zero through a pipe: a 48 MiB file with holes at its start, in
# its middle and at its end, and an O_APPEND output
small=$tmp/small
truncate -s 48M "$small"
head -c 5000 /dev/urandom | dd of="$small" bs=1M seek=8 conv=notrunc status=none
head -c 4096 /dev/urandom | dd of="$small" bs=1M seek=30 conv=notrunc status=none
run 0 "$UBJ_TOOL" cp "$small" "$img:/small"
"$UBJ_TOOL" cat "$img:/small" | cmp - "$small" || fail "cat | cmp"
printf 'head' >"$tmp/app"
"$UBJ_TOOL" cat "$img:/small" >>"$tmp/app" || fail "cat >> file"
{ printf 'head'; cat "$small"; } | cmp - "$tmp/app" || fail "cat >> file: contents"
# and a file that is all hole
: >"$tmp/empty"
run 0 "$UBJ_TOOL" cp "$tmp/empty" "$img:/empty"
truncate -s 3M "$tmp/holes"
run 0 "$UBJ_TOOL" cp "$tmp/holes" "$img:/holes"
"$UBJ_TOOL" cat "$img:/holes" | cmp - "$tmp/holes" || fail "cat of a file of only holes"
"$UBJ_TOOL" cat "$img:/empty" | cmp - "$tmp/empty" || fail "cat of an empty file"
run 0 "$UBJ_TOOL" cp "$img:/holes" "$tmp/holes.out"
cmp "$tmp/holes" "$tmp/holes.out" && [ "$(stat -c %b "$tmp/holes.out")" -eq 0 ] ||
  fail "cp out of a file of only holes"
run 0 "$UBJ_TOOL" fsck -n "$img"

echo "tools sparse: all checks passed"
