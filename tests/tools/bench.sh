# tests/tools/bench.sh -- `ubjfs bench micro` runs with a small --ops and
# prints every row (table and --csv), on RAM and on a file device (which
# it removes again); bad options are usage errors.  Checks that a broken
# benchmark would fail, each also run on a doctored copy of the output to
# show it can fail:
#  - counts: every row reports the operations it was asked to do, with
#    the documented clamps (write rows at most a quarter of the image's
#    blocks, the fsync row at most --fsync-ops);
#  - clock: on a device model with --clock real (the model sleeps for its
#    device time), each row's wall seconds are at least 0.95 of its
#    modeled seconds and all rows together at most the wall time of the
#    whole command -- so the seconds column is the rows' real time, in
#    seconds.
# (Replaces a check that ops/s x ns/op = 1e9, true by construction.)
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" bench
rows="create stat unlink create+unlink read-4k-cached write-4k-seq fsync-4k-append"

# counts_ok CSV OPS WRITES FSYNCS -- every row of a --csv output counts what
# was asked: OPS for the name and read rows, WRITES for write-4k-seq, FSYNCS
# for fsync-4k-append; and has positive figures
counts_ok() {
  awk -F, -v n="$2" -v w="$3" -v f="$4" '
    NR == 1 { next }
    { want = $1 == "write-4k-seq" ? w : $1 == "fsync-4k-append" ? f : n
      if ($2 != want || !($3 > 0 && $4 > 0 && $5 > 0)) bad = 1; rows++ }
    END { exit bad || rows != 7 }' "$1"
}
# clock_ok CSV WALL -- rows of a --clock real model run: seconds >= 0.95 x
# model_seconds (where that is >= 1 ms), and their sum <= WALL seconds
clock_ok() {
  awk -F, -v wall="$2" '
    NR == 1 { next }
    { sum += $3; if ($6 >= 0.001 && $3 < 0.95 * $6) bad = 1; rows++ }
    END { exit bad || rows != 7 || sum > wall }' "$1"
}
# now_s -- the wall clock in seconds
now_s() { date +%s.%N; }

run 0 "$UBJ_TOOL" bench micro --ops 300 --runs 3 --fsync-ops 20
cat "$tmp/out"
head -n 1 "$tmp/out" | grep -q "^ubjfs bench micro: ram device, 256 MiB image, mode none, median of 3 runs" ||
  fail "banner: $(head -n 1 "$tmp/out")"
for r in $rows; do
  awk -v r="$r" '$1 == r' "$tmp/out" | grep -q . || fail "no row $r in the table"
done
[ "$(grep -c . "$tmp/out")" -eq 9 ] || fail "table has $(grep -c . "$tmp/out") lines, want 9"

# counts: unclamped, and clamped by a 5 MiB image (1280 blocks: writes
# at most 320) with --fsync-ops above that
run 0 "$UBJ_TOOL" bench micro --ops 300 --runs 1 --fsync-ops 20 --csv
counts_ok "$tmp/out" 300 300 20 || fail "counts of --ops 300 --fsync-ops 20: $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/counts.csv"
run 0 "$UBJ_TOOL" bench micro --ops 400 --runs 1 --fsync-ops 400 --size 5M --csv
counts_ok "$tmp/out" 400 320 320 ||
  fail "counts of --ops 400 --fsync-ops 400 --size 5M: $(cat "$tmp/out")"
sed 's/^write-4k-seq,300,/write-4k-seq,299,/' "$tmp/counts.csv" >"$tmp/bad.csv"
if counts_ok "$tmp/bad.csv" 300 300 20; then fail "counts_ok accepts a row one op short"; fi

# clock: a disk model on the real clock (each fsync waits for the disk)
t0=$(now_s)
run 0 "$UBJ_TOOL" bench micro --ops 20 --runs 1 --fsync-ops 5 --size 16M \
  --device hdd:hp_c2249a --clock real --csv
wall=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { print b - a }')
clock_ok "$tmp/out" "$wall" || fail "seconds against the real clock (${wall} s in all): $(cat "$tmp/out")"
awk -F, '$1 == "fsync-4k-append" { exit !($6 >= 0.01) }' "$tmp/out" ||
  fail "the fsync row waited less than 10 ms for the disk: $(cat "$tmp/out")"
awk -F, 'BEGIN { OFS = "," } NR > 1 { $3 = $3 / 1000 } 1' "$tmp/out" >"$tmp/bad.csv"
if clock_ok "$tmp/bad.csv" "$wall"; then fail "clock_ok accepts seconds given in ks"; fi
awk -F, 'BEGIN { OFS = "," } NR > 1 { $3 = $3 * 1000 } 1' "$tmp/out" >"$tmp/bad.csv"
if clock_ok "$tmp/bad.csv" "$wall"; then fail "clock_ok accepts seconds given in ms"; fi

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
