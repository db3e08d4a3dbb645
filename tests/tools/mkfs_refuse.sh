# tests/tools/mkfs_refuse.sh -- a mkfs that fails changes nothing and says
# nothing but its error (issue 14, defect 3).  Every option, the region
# (--nvm: path, size, writability, room) and the image's geometry are
# checked before anything is written: each refused mkfs over a populated
# image leaves it byte-identical (sha256) and still mountable with its
# files, prints no summary on stdout and exits non-zero, and a region that
# did not exist before is not left behind.  Mode ubj without --nvm
# succeeds and says, on stderr, the mount command that makes the region.
#
# Fails on fd8c42e: `--nvm R --nvm-size 4K` printed "Made a ubjfs file
# system ..." and the summary, then exited 1; `-f --nvm /dev/null` exited
# 1 with the old file system already overwritten (sha256 changed); so did
# `--nvm IMG` (the image as its own region), `-f -s 64M -N 10000000` and
# `-m ordered -J 1G` (truncated to 0 before the format's checks), and
# `-f -s 4P` on ext4 (left a 0-byte file after "File too large"); mode ubj
# without --nvm said nothing about the region.
# A valid region (some image's) is taken over only with --force (before,
# another image's mkfs reformatted it silently).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" mkfs_refuse
fail() { echo "FAIL: $*"; exit 1; }     # stop at the first failure

img=$tmp/pop.img
run 0 "$UBJ_TOOL" mkfs -q --size 64M "$img"
mkdir -p "$tmp/src/d"
head -c 200000 /dev/urandom >"$tmp/src/d/blob"
printf 'keep me\n' >"$tmp/src/note"
run 0 "$UBJ_TOOL" cp -r "$tmp/src" "$img:/src"
sum=$(sha256sum <"$img")

# refused WANT WHAT ARGS... -- mkfs ARGS exits WANT, prints nothing on
# stdout, and leaves $img as it was
refused() {
  local want=$1 what=$2; shift 2
  run "$want" "$UBJ_TOOL" mkfs "$@"
  [ ! -s "$tmp/out" ] || fail "$what: printed on stdout: $(head -c 300 "$tmp/out")"
  [ "$(wc -l <"$tmp/err")" -le 2 ] || fail "$what: more than one error: $(head -c 600 "$tmp/err")"
  [ "$(sha256sum <"$img")" = "$sum" ] || fail "$what: the image changed"
}

R=$tmp/r.nvm
refused 2 "--nvm-size 4K" -f --mode ubj --nvm "$R" --nvm-size 4K "$img"
grep -q "invalid --nvm-size '4K'.*holds no buffer" "$tmp/err" || fail "4K message: $(cat "$tmp/err")"
[ ! -e "$R" ] || fail "--nvm-size 4K left a region file"
# a new image with a bad region: neither the image nor the region is made
run 2 "$UBJ_TOOL" mkfs --size 64M --mode ubj --nvm "$R" --nvm-size 4K "$tmp/new.img"
[ ! -s "$tmp/out" ] || fail "new image, 4K region: printed a summary: $(head -c 300 "$tmp/out")"
[ ! -e "$tmp/new.img" ] && [ ! -e "$R" ] || fail "new image, 4K region: files left behind"

refused 1 "--nvm /dev/null" -f --mode ubj --nvm /dev/null "$img"
grep -q "/dev/null: cannot be mapped as an NVM region" "$tmp/err" || fail "/dev/null message: $(cat "$tmp/err")"
refused 2 "--nvm IMAGE" -f --mode ubj --nvm "$img" "$img"
grep -q "is the image itself" "$tmp/err" || fail "--nvm IMAGE message: $(cat "$tmp/err")"
: >"$tmp/plain"
refused 1 "--nvm under a file" -f --mode ubj --nvm "$tmp/plain/r.nvm" "$img"
grep -q "r.nvm: Not a directory" "$tmp/err" || fail "under a file: $(cat "$tmp/err")"
refused 1 "--nvm in a missing directory" -f --mode ubj --nvm "$tmp/nodir/r.nvm" "$img"
grep -q "cannot create the region: .*nodir: No such file" "$tmp/err" || fail "missing directory: $(cat "$tmp/err")"
mkdir "$tmp/rdir"
refused 1 "--nvm a directory" -f --mode ubj --nvm "$tmp/rdir" "$img"
# more than the region's file system has free (when that is below the
# largest region, 1 TiB)
free_k=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
if [ "$free_k" -lt $((512 * 1024 * 1024)) ]; then
  refused 1 "--nvm-size beyond the free space" -f --mode ubj --nvm "$R" \
    --nvm-size $((free_k * 2))K "$img"
  grep -q "the region needs .* free" "$tmp/err" || fail "no room message: $(cat "$tmp/err")"
  [ ! -e "$R" ] || fail "no room: left a region file"
else
  echo "note: not checked: --nvm-size beyond the free space ($tmp has over 512 GiB free)"
fi

# geometry: the options against the image's real size
refused 1 "-N beyond the image" -f -s 64M -N 10000000 "$img"
refused 1 "-J beyond the image" -f -s 64M -m ordered -J 1G "$img"
# a --size the host's file system refuses (ext4: 16 TiB files at most)
if ! python3 -c 'import os,sys; f=open(sys.argv[1],"wb"); os.truncate(f.fileno(), 1<<52)' \
     "$tmp/big" 2>/dev/null; then
  refused 1 "--size the host refuses" -f -s 4P "$img"
  grep -q "cannot size to" "$tmp/err" || fail "4P message: $(cat "$tmp/err")"
else
  echo "note: not checked: a --size the host refuses ($tmp takes 4 PiB files)"
fi
rm -f "$tmp/big"

# still the populated image
run 0 "$UBJ_TOOL" cat "$img:/src/note"
[ "$(cat "$tmp/out")" = "keep me" ] || fail "the file system after the refusals"
run 0 "$UBJ_TOOL" fsck -n "$img"

# mode ubj without --nvm: made, and the next step said
run 0 "$UBJ_TOOL" mkfs -f --mode ubj "$img"
grep -q "^Made a ubjfs file system on $img" "$tmp/out" || fail "ubj without --nvm: no summary"
grep -qF "ubjfs mount --nvm REGION --format-nvm $img MOUNTPOINT" "$tmp/err" ||
  fail "ubj without --nvm: next step not said: $(cat "$tmp/err")"
run 0 "$UBJ_TOOL" mkfs -q -f --mode ubj "$img"
[ ! -s "$tmp/out" ] && grep -q "format-nvm" "$tmp/err" || fail "-q: the note must still be said"
# and with --nvm: summary with the region, which the other tools accept
run 0 "$UBJ_TOOL" mkfs -f --mode ubj --nvm "$R" --nvm-size 1M "$img"
grep -q "^  nvm region:  $R " "$tmp/out" || fail "summary without the region: $(cat "$tmp/out")"
[ ! -s "$tmp/err" ] || fail "ubj with --nvm: $(cat "$tmp/err")"
run 0 "$UBJ_TOOL" ls --nvm "$R" "$img:/"
run 0 "$UBJ_TOOL" fsck -n --nvm "$R" "$img"
# that region is $img's: another image's mkfs must not take it without
# --force (the new image is not made, $img keeps its region); with it, it
# may, and $img's uuid no longer matches the region
other=$tmp/other.img
run 1 "$UBJ_TOOL" mkfs -q --size 64M --mode ubj --nvm "$R" "$other"
grep -q "is the NVM region of the image with uuid .*use --force" "$tmp/err" ||
  fail "another image's region: $(cat "$tmp/err")"
[ ! -e "$other" ] || fail "another image's region: $other was made"
run 0 "$UBJ_TOOL" fsck -n --nvm "$R" "$img"
run 0 "$UBJ_TOOL" mkfs -q -f --size 64M --mode ubj --nvm "$R" --nvm-size 1M "$other"
run 1 "$UBJ_TOOL" ls --nvm "$R" "$img:/"
grep -q "belongs to another image" "$tmp/err" || fail "after --force: $(cat "$tmp/err")"

echo "tools mkfs_refuse: all checks passed"
