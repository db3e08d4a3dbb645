# tests/ubj/tools.sh -- the tools in mode ubj: `mkfs --mode ubj --nvm
# REGION` makes the pair; the other tools reach a ubj image through
# UBJFS_NVM and refuse it, in one line, without; `fsck --nvm REGION IMAGE`
# checks the pair (and refuses -y, a foreign region, a missing one);
# mkfs refuses --nvm without --mode ubj; `inspect` names the mode;
# `bench ubj` runs (tiny sizes: a smoke test, not a measurement).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" ubjtools
# one_line WORDS -- stderr is one line containing WORDS
one_line() {
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "want one error line, got: $(cat "$tmp/err")"
  grep -q -- "$1" "$tmp/err" || fail "error line lacks '$1': $(cat "$tmp/err")"
}

img=$tmp/u.img
nvm=$shm/u.nvm
# --- mkfs --------------------------------------------------------------------
run 2 "$UBJ_TOOL" mkfs --size 16M --nvm "$nvm" "$img"          # needs --mode ubj
[ -e "$img" ] && fail "mkfs made an image after a usage error"
run 2 "$UBJ_TOOL" mkfs --size 16M --mode ubj --nvm-size 1M "$img"  # needs --nvm
# mkfs never overwrites a file that is not an (empty) region without
# --force, refuses a directory, and leaves nothing behind when it fails
head -c 10000 /dev/urandom >"$tmp/data.bin"
cp "$tmp/data.bin" "$tmp/data.keep"
run 1 "$UBJ_TOOL" mkfs --size 16M --mode ubj --nvm "$tmp/data.bin" "$tmp/x.img"
one_line "is not an NVM region; use --force"
cmp -s "$tmp/data.bin" "$tmp/data.keep" || fail "mkfs --nvm overwrote a data file"
[ -e "$tmp/x.img" ] && fail "mkfs made an image although its region was refused"
run 1 "$UBJ_TOOL" mkfs --size 16M --mode ubj --nvm "$tmp" "$tmp/x.img"
one_line "is a directory"
run 1 "$UBJ_TOOL" mkfs --size 16M --mode ubj --nvm "$tmp/huge.nvm" --nvm-size 99999T "$tmp/x.img"
[ -e "$tmp/huge.nvm" ] && fail "a failed mkfs left its region file behind"
run 0 "$UBJ_TOOL" mkfs --size 16M --mode ubj --nvm "$nvm" --nvm-size 2M "$img"
grep -q "mode: *ubj" "$tmp/out" || fail "mkfs summary lacks the mode: $(cat "$tmp/out")"
grep -q "nvm region: *$nvm" "$tmp/out" || fail "mkfs summary lacks the region: $(cat "$tmp/out")"
[ "$(stat -c %s "$nvm")" -le $((2 * 1024 * 1024)) ] || fail "region larger than --nvm-size"
UBJFS_NVM=$nvm run 0 "$UBJ_TOOL" inspect "$img"
grep -q "mode: *ubj" "$tmp/out" || fail "inspect does not name mode ubj: $(head -c 300 "$tmp/out")"

# --- using the pair ----------------------------------------------------------
printf 'hello ubj\n' >"$tmp/f"
head -c 300000 /dev/urandom >"$tmp/big"
run 1 "$UBJ_TOOL" cp "$tmp/f" "$img:/f"                       # no region given
one_line "NVM region"
UBJFS_NVM=$nvm run 0 "$UBJ_TOOL" cp "$tmp/f" "$tmp/big" "$img:/"
cp "$nvm" "$tmp/nvm.before"
UBJFS_NVM=$nvm run 0 "$UBJ_TOOL" cat "$img:/f"
cmp -s "$tmp/out" "$tmp/f" || fail "cat through the region differs"
UBJFS_NVM=$nvm run 0 "$UBJ_TOOL" cp "$img:/big" "$tmp/big.out"
cmp -s "$tmp/big" "$tmp/big.out" || fail "cp out through the region differs"
UBJFS_NVM=$nvm run 0 "$UBJ_TOOL" ls "$img:/"
grep -q "big" "$tmp/out" || fail "ls lacks big: $(cat "$tmp/out")"
# the read-only tools use the region as cache memory, privately
cmp -s "$nvm" "$tmp/nvm.before" || fail "a read-only tool changed the region file"
# a clean unmount checkpoints: the image alone is complete
run 0 "$UBJ_TOOL" fsck "$img"
run 0 "$UBJ_TOOL" fsck --nvm "$nvm" "$img"
run 0 "$UBJ_TOOL" fsck -v --nvm "$nvm" "$img"
grep -q "clean" "$tmp/out" || fail "fsck --nvm -v does not say clean: $(cat "$tmp/out")"

# --- refusals ---------------------------------------------------------------
run 16 "$UBJ_TOOL" fsck -y --nvm "$nvm" "$img"
run 8 "$UBJ_TOOL" fsck --nvm "$tmp/missing.nvm" "$img"
grep -q "no region" "$tmp/err" || fail "missing region: $(cat "$tmp/err")"
other=$tmp/o.img
run 0 "$UBJ_TOOL" mkfs --size 8M --mode ubj --nvm "$tmp/o.nvm" "$other"
cp "$nvm" "$tmp/nvm.before"
run 8 "$UBJ_TOOL" fsck --nvm "$nvm" "$other"
grep -q "another image" "$tmp/err" || fail "foreign region: $(cat "$tmp/err")"
UBJFS_NVM=$nvm run 1 "$UBJ_TOOL" ls "$other:/"
one_line "another image"
cmp -s "$nvm" "$tmp/nvm.before" || fail "a refused region was changed"
printf 'not a region' >"$tmp/bad.nvm"
UBJFS_NVM=$tmp/bad.nvm run 1 "$UBJ_TOOL" ls "$img:/"
one_line "not a ubjfs NVM region"
[ "$(cat "$tmp/bad.nvm")" = "not a region" ] || fail "a non-region file was changed"
# mkfs --nvm over a region that is not a region initialises it
run 0 "$UBJ_TOOL" mkfs --size 8M --mode ubj --nvm "$tmp/bad.nvm" -f "$other"
UBJFS_NVM=$tmp/bad.nvm run 0 "$UBJ_TOOL" ls "$other:/"

# --- bench ubj (smoke) ------------------------------------------------------
run 0 "$UBJ_TOOL" bench ubj -n 200 --mix-ops 300 -s 64M -c 1024 \
    --recovery-size 16M --nvm-dir "$shm" --csv
for k in append_fsync_ubj_median_us append_fsync_none_median_us \
         recovery_scan_ms_per_gib mix_fsync_ubj_ops_per_s mix_nosync_none_ops_per_s; do
  grep -q "^$k," "$tmp/out" || fail "bench ubj lacks $k: $(head -c 400 "$tmp/out")"
done
ls "$shm"/ubjfs-bench-* >/dev/null 2>&1 && fail "bench ubj left region files"
run 2 "$UBJ_TOOL" bench ubj --bogus

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ok"
