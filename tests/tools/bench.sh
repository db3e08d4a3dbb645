# tests/tools/bench.sh -- `ubjfs bench micro` runs with a small --ops and
# prints every row with sane numbers (table and --csv), on RAM and on a
# file device (which it removes again); bad options are usage errors.
# Not a timed test: rates are only checked to be positive.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" bench
rows="create stat unlink create+unlink read-4k-cached write-4k-seq fsync-4k-append"

run 0 "$UBJ_TOOL" bench micro --ops 300 --runs 3 --fsync-ops 20
cat "$tmp/out"
head -n 1 "$tmp/out" | grep -q "^ubjfs bench micro: ram device, 256 MiB image, mode none, median of 3 runs" ||
  fail "banner: $(head -n 1 "$tmp/out")"
for r in $rows; do
  line=$(awk -v r="$r" '$1 == r' "$tmp/out")
  [ -n "$line" ] || { fail "no row $r"; continue; }
  want_ops=300; [ "$r" = fsync-4k-append ] && want_ops=20
  echo "$line" | awk -v n="$want_ops" '
    { ok = ($2 == n && $3 > 0 && $4 > 0 && $5 > 0 &&
            ($4 * $5 > 0.9e9 && $4 * $5 < 1.1e9)) }   # ops/s x ns/op = 1e9
    END { exit ok ? 0 : 1 }' || fail "row $r: bad numbers: $line"
done
[ "$(grep -c . "$tmp/out")" -eq 9 ] || fail "table has $(grep -c . "$tmp/out") lines, want 9"

run 0 "$UBJ_TOOL" bench micro --ops 100 --runs 1 --fsync-ops 10 --csv
[ "$(head -n 1 "$tmp/out")" = "op,ops,seconds,ops_per_s,ns_per_op" ] || fail "csv header"
[ "$(grep -c . "$tmp/out")" -eq 8 ] || fail "csv has $(grep -c . "$tmp/out") lines, want 8"
for r in $rows; do
  grep -Eq "^$(printf '%s' "$r" | sed 's/+/\\+/g'),[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+\$" "$tmp/out" ||
    fail "csv row $r missing or malformed"
done

f=$tmp/bench.img
run 0 "$UBJ_TOOL" bench micro --ops 50 --runs 1 --fsync-ops 5 --size 16M --device "file:$f"
grep -q "file device, 16 MiB image" "$tmp/out" || fail "file device banner: $(head -n 1 "$tmp/out")"
[ -e "$f" ] && fail "bench left its image file behind"
printf 'keep me' >"$f"
run 1 "$UBJ_TOOL" bench micro --ops 10 --runs 1 --device "file:$f"
grep -q "use --force" "$tmp/err" || fail "bench over an existing file: $(cat "$tmp/err")"
[ "$(cat "$f")" = "keep me" ] || fail "bench overwrote an existing file"

for bad in "micro --ops 0" "micro --ops x" "micro --runs 0" "micro --device disk" \
           "micro --size 1M" "micro --size 4M --ops 200000" "micro --cache 3" "macro" "micro extra" "micro --bogus"; do
  # shellcheck disable=SC2086
  run 2 "$UBJ_TOOL" bench $bad
  head -n 1 "$tmp/err" | grep -q "^ubjfs bench: " || fail "bench $bad: message '$(head -n 1 "$tmp/err")'"
done
run 2 "$UBJ_TOOL" bench micro --mode no-such-mode --ops 10 --runs 1
run 0 "$UBJ_TOOL" bench micro --help
grep -q "^Usage: ubjfs bench micro" "$tmp/out" || fail "bench micro --help"
run 0 "$UBJ_TOOL" bench --help
grep -q "^       ubjfs bench run" "$tmp/out" || fail "bench --help: no overview"
grep -q "micro, ubj, modes\|headline, run" "$tmp/err" && fail "bench --help wrote to stderr"

[ "$fails" -eq 0 ] && echo "tools bench: all checks passed"
exit $((fails > 0))
