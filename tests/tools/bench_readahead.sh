# tests/tools/bench_readahead.sh -- `ubjfs bench readahead`: with no
# arguments it prints a row per device x pattern x call size x policy (8
# x 6 x 2 x 6 = 576) and per device x SQLite query kind x policy but the
# oracle (8 x 2 x 5 = 80), a progress line per run on stderr and the
# target lines; the CSV has the documented columns and one line per cell, the
# JSON parses with as many cells, a second run (of two of the devices)
# gives byte-identical CSV lines (virtual clock); plots are SVG files when gnuplot is
# installed; the figures that follow from the models hold (NAND: off-page
# = off in time, energy; linux-2013 wastes blocks on random reads, linux
# reads exactly the random calls' pages on 128 KiB calls; the oracle never
# wastes a block; sequential 4 KiB on ssd:emmc: linux 35 device reads
# against off-page's 1024); bad options are usage errors (exit 2).  Not a
# timed test: no figure is compared to a bound of wall time.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" bench_readahead
command -v python3 >/dev/null || test_skip "python3 is not installed (scripts/install-deps)"

run 0 "$UBJ_TOOL" bench readahead --csv "$tmp/a.csv" --json "$tmp/a.json" --plots "$tmp/plots"
rows=$(awk 'NF == 15 && $3 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/' "$tmp/out" | wc -l)
[ "$rows" = 656 ] || fail "table: $rows rows, want 656"
[ "$(grep -c '^\[[0-9]*/656\] ' "$tmp/err")" = 656 ] || fail "not a progress line per run"
for t in "NAND adaptive" "NAND random" "ssd:emmc seq 4 KiB" "hdd:hp_c2249a/dra-off seq 4 KiB" \
         "adaptive <= 1.05" "adaptive closes"; do
  grep -q "^target $t.*: \(met\|NOT met\)" "$tmp/out" || fail "no target line '$t'"
done
python3 - "$tmp/a.csv" "$tmp/a.json" <<'PY' || fail "CSV/JSON or the model's figures do not check"
import csv, json, sys
cols = ("device,pattern,call_kib,policy,calls,bytes,mean_ns,p99_ns,total_ns,energy_j,"
        "mj_per_mib,dev_reads,ra_issued,ra_used,ra_wasted,ra_late").split(",")
rows = list(csv.DictReader(open(sys.argv[1])))
assert list(rows[0].keys()) == cols, rows[0].keys()
assert len(rows) == 656
j = json.load(open(sys.argv[2]))
assert j["schema"] == "ubjfs-bench-readahead/1" and len(j["cells"]) == 656
cell = {(r["device"], r["pattern"], r["call_kib"], r["policy"]): r for r in rows}
for dev in ("nand:slc", "nand:mlc"):
    for pat in ("sequential", "random", "strided", "backward", "interleaved", "mixed"):
        for kib in ("4", "128"):
            a, b = cell[(dev, pat, kib, "off-page")], cell[(dev, pat, kib, "off")]
            assert a["total_ns"] == b["total_ns"] and a["energy_j"] == b["energy_j"], (dev, pat, kib)
    assert int(cell[(dev, "random", "4", "linux-2013")]["ra_wasted"]) > 0
    r = cell[(dev, "random", "128", "linux")]
    assert r["ra_wasted"] == "0" and r["ra_issued"] == str(int(r["bytes"]) // 4096)
for r in rows:
    if r["policy"] == "oracle":
        assert r["ra_wasted"] == "0", r
    assert int(r["ra_used"]) + int(r["ra_wasted"]) == int(r["ra_issued"])
assert cell[("ssd:emmc", "sequential", "4", "linux")]["dev_reads"] == "35"
assert cell[("ssd:emmc", "sequential", "4", "off-page")]["dev_reads"] == "1024"
for dev in ("nand:slc", "nand:mlc"):   # the seed's random effect through SQLite
    pt = {p: int(cell[(dev, "sql-point", "4", p)]["total_ns"]) for p in ("off", "linux-2013")}
    assert pt["linux-2013"] > pt["off"], pt
    q = cell[(dev, "sql-point", "4", "linux-2013")]   # the harness's counters
    assert int(q["dev_reads"]) > 0 and int(q["ra_wasted"]) > 0, q
PY
run 0 "$UBJ_TOOL" bench readahead -q -d nand:slc -d ssd:emmc --pattern random \
  --pattern sql-point --csv "$tmp/b.csv"
{ head -n 1 "$tmp/a.csv"; grep -E '^(nand:slc|ssd:emmc),(random|sql-point),' "$tmp/a.csv"; } \
  >"$tmp/a2.csv"
cmp -s "$tmp/a2.csv" "$tmp/b.csv" || fail "two runs differ (virtual clock)"
[ -s "$tmp/err" ] && fail "-q printed progress: $(head -n 2 "$tmp/err")"
if command -v gnuplot >/dev/null; then
  n=$(find "$tmp/plots" -name 'ra-*.svg' -size +0 | wc -l)
  [ "$n" = 16 ] || fail "plots: $n SVG files, want 16 (8 devices x 2 sizes)"
else
  skip_part "gnuplot is not installed: no SVG checked"
fi
[ -s "$tmp/plots/plots.gp" ] || fail "no plots.gp"

run 0 "$UBJ_TOOL" bench readahead -d ssd:sata -p off -p adaptive -s 8 --pattern backward
[ "$(awk 'NF == 15 && $3 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/' "$tmp/out" | wc -l)" = 2 ] || fail "a chosen grid: $(cat "$tmp/out")"
for bad in "--policy bogus" "--policy linux:7" "-s 3" "-s 2048" "--pattern zigzag" \
           "--file-size 1K" "--seed 0" "--seed -1" "extra" "--bogus" \
           "--pattern random --file-size 256K -s 512" "--file-size 260K -s 128" \
           "-d ssd:emmc -d ssd:nosuch" "-d ram"; do
  # shellcheck disable=SC2086
  run 2 "$UBJ_TOOL" bench readahead $bad
  [ -s "$tmp/out" ] && fail "bench readahead $bad printed on stdout"
  grep -q '^\[1/' "$tmp/err" && fail "bench readahead $bad ran a cell before refusing"
  [ "$(grep -c . "$tmp/err")" = 2 ] || fail "bench readahead $bad: not one line + the hint: $(cat "$tmp/err")"
  grep -q "^Try 'ubjfs bench readahead --help'" "$tmp/err" || fail "bench readahead $bad: no hint"
done
# an output that cannot be written fails before the first run
run 1 "$UBJ_TOOL" bench readahead -d ssd:emmc -p off -s 128 --pattern sequential \
  --csv "$tmp/no/such/dir/x.csv"
grep -q '^\[1/' "$tmp/err" && fail "--csv into a missing directory: ran first"
# a name given twice is one column
run 0 "$UBJ_TOOL" bench readahead -q -d ssd:emmc -d ssd:emmc -p off -p off -s 128 -s 128 \
  --pattern sequential
[ "$(awk 'NF == 15 && $3 ~ /^[0-9]+$/' "$tmp/out" | wc -l)" = 1 ] || fail "duplicates: $(cat "$tmp/out")"
echo "bench_readahead.sh: ok"
