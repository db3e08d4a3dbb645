# tests/journal/tools.sh -- the tools and the journal modes: `mkfs --mode
# ordered|journal|writeback` reserves the default journal (4 MiB for a
# 64 MiB image), `--journal-size` and `--journal-async-commit` (and their
# refusals: too small, too large for the image), a journal for mode none
# when asked; cp/cat round trips in each mode with fsck -n clean;
# `inspect` names the mode and shows the journal region; `bench modes`
# runs (tiny: a smoke test, not a measurement).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" jtools

img=$tmp/j.img
head -c 300000 /dev/urandom >"$tmp/data"

for mode in ordered journal writeback; do
  rm -f "$img"
  run 0 "$UBJ_TOOL" mkfs --size 64M --mode "$mode" "$img"
  grep -q "journal: *4 MiB (1024 blocks" "$tmp/out" ||
    fail "$mode: mkfs summary lacks the default journal: $(cat "$tmp/out")"
  run 0 "$UBJ_TOOL" cp "$tmp/data" "$img:/data"
  run 0 "$UBJ_TOOL" fsck -n "$img"
  run 0 "$UBJ_TOOL" cat "$img:/data"
  cmp -s "$tmp/out" "$tmp/data" || fail "$mode: cat does not give back what cp put in"
  run 0 "$UBJ_TOOL" inspect "$img"
  grep -q "mode: *$mode" "$tmp/out" || fail "$mode: inspect does not name the mode"
  grep -Eq "journal +[0-9]+ +1024" "$tmp/out" || fail "$mode: inspect lacks the journal region"
done

rm -f "$img"
run 0 "$UBJ_TOOL" mkfs --size 64M --mode journal --journal-size 8M --journal-async-commit "$img"
grep -q "journal: *8 MiB (2048 blocks.*async commit" "$tmp/out" ||
  fail "--journal-size 8M --journal-async-commit: $(cat "$tmp/out")"
run 0 "$UBJ_TOOL" cp "$tmp/data" "$img:/data"
run 0 "$UBJ_TOOL" fsck -n "$img"

rm -f "$img"
run 0 "$UBJ_TOOL" mkfs --size 16M --journal-size 1M "$img"     # mode none, asked
grep -q "journal: *1 MiB (256 blocks" "$tmp/out" || fail "none + --journal-size: $(cat "$tmp/out")"
run 0 "$UBJ_TOOL" cp "$tmp/data" "$img:/data"
run 0 "$UBJ_TOOL" fsck -n "$img"

rm -f "$img"
run 2 "$UBJ_TOOL" mkfs --size 16M --mode ordered --journal-size 100K "$img"
grep -q "below the minimum" "$tmp/err" || fail "small journal: $(cat "$tmp/err")"
[ -e "$img" ] && fail "a refused mkfs left $img"
run 1 "$UBJ_TOOL" mkfs --size 16M --mode ordered --journal-size 20M "$img"
grep -q "leaves no data blocks" "$tmp/err" || fail "huge journal: $(cat "$tmp/err")"
run 2 "$UBJ_TOOL" mkfs --size 16M --journal-size nonsense "$img"

run 0 "$UBJ_TOOL" bench modes --device ram --size 16M --ops 20 --modes none,ordered,journal,writeback,recovery
for m in none ordered journal writeback; do
  grep -Eq "^$m +[0-9]" "$tmp/out" || fail "bench modes lacks a row for $m: $(cat "$tmp/out")"
done
grep -q "^recovery" "$tmp/out" || fail "bench modes lacks the recovery figure"
run 2 "$UBJ_TOOL" bench modes --ops 1

[ "$fails" -eq 0 ] || exit 1
echo "ok"
