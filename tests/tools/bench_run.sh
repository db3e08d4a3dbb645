# tests/tools/bench_run.sh -- `ubjfs bench` (the headline experiment, at
# its --quick scale) and `ubjfs bench run`: the table has a row for every
# workload x mode x device and the ratio lines; results.csv has the
# documented columns and parses; results.json parses and has the
# documented fields; the same command twice gives byte-identical CSV
# (virtual clock), another seed different counters; plots are non-empty
# SVG files when gnuplot is installed; without gnuplot the SVG files of
# an earlier run in the same directory are removed and not listed; the
# JSON config reports the effective defaults; --quick says its figures are
# not results; bad options (also an unknown --kv key, a --trace-in file
# that is missing, not a trace or of another workload than -w, and an
# unknown `bench modes -m` name) are one-line usage errors with exit 2;
# an output path that cannot be written is one error line, exit 1, before
# any run.  Not a timed test: no figure is compared to a bound.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" bench_run
command -v python3 >/dev/null || test_skip "python3 is not installed (scripts/install-deps)"

workloads="postmark varmail fileserver iozone"
modes="ordered journal ubj none"
devices="ssd:sata hdd:modern7200"
cols="workload,mode,device,nvm_profile,clock,scale,ops_asked,seed,cache_blocks,procs,ops,"
cols+="elapsed_ns,ops_per_s,lat_mean_ns,lat_p50_ns,lat_p99_ns,lat_max_ns,bytes_data,"
cols+="bytes_metadata,bytes_journal,bytes_checkpoint,bytes_device,nvm_bytes,dev_flushes,"
cols+="energy_dev_j,energy_nvm_j,hit_ratio,sync_ns,app_bytes_written,app_bytes_read,commits,"
cols+="checkpoints"
for p in op init_op; do
  for o in create unlink mkdir rmdir open read write append fsync stat rename readdir other; do
    cols+=",${p}_$o"
  done
done
cols+=",txn_overlap_max,read_wait_locked_ns,read_wait_unlocked_ns,victim_wait_ns"

# check_csv FILE ROWS -- header = the documented columns, ROWS data rows
# of as many fields, numbers where numbers belong
check_csv() {
  python3 - "$1" "$2" "$cols" <<'PY' || fail "csv $1 does not check"
import csv, sys
path, rows, cols = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
with open(path, newline="") as f:
    data = list(csv.reader(f))
assert data[0] == cols, "header %r" % data[0]
assert len(data) == rows + 1, "%d data rows, want %d" % (len(data) - 1, rows)
for r in data[1:]:
    assert len(r) == len(cols), r
    for name, v in zip(cols[5:], r[5:]):
        float(v)
    assert int(r[cols.index("ops")]) > 0 and float(r[cols.index("ops_per_s")]) > 0, r
    assert r[cols.index("clock")] == "virtual", r
PY
}

# check_json FILE ROWS -- parses; schema, config and every result field
check_json() {
  python3 -m json.tool "$1" >/dev/null || { fail "json $1 does not parse"; return; }
  python3 - "$1" "$2" "$cols" <<'PY' || fail "json $1 does not check"
import json, sys
doc = json.load(open(sys.argv[1]))
rows, cols = int(sys.argv[2]), sys.argv[3].split(",")
assert doc["schema"] == "ubjfs-bench/2"
for k in ("command", "clock", "seed", "procs", "think_ns", "cache_blocks",
          "image_blocks", "commit_interval_ms", "nvm_profile", "readahead", "op_cpu_ns",
          "final_sync", "wall_s"):
    assert k in doc["config"], k
assert len(doc["results"]) == rows, len(doc["results"])
c = doc["config"]
assert (c["cache_blocks"], c["image_blocks"], c["commit_interval_ms"], c["nvm_profile"]) == \
    (4096, 65536, 5000, "dram"), c
assert c["requested"]["cache_blocks"] == 0 and c["procs"] is None, c
assert all(r["cache_blocks"] == c["cache_blocks"] for r in doc["results"])
for r in doc["results"]:
    for c in cols:
        if c.startswith("op_"):
            assert c[3:] in r["opcount"], c
        elif c.startswith("init_op_"):
            assert c[8:] in r["init_opcount"], c
        else:
            assert c in r, c
for k in ("ubj/ordered", "ubj/journal"):
    assert "pairs" in doc["ratios"][k] and "geometric_mean" in doc["ratios"][k]
PY
}

# the headline experiment at its --quick scale
res=$tmp/results
run 0 "$UBJ_TOOL" bench --quick -q --results "$res"
cat "$tmp/out"
[ -s "$tmp/err" ] && fail "bench --quick -q wrote on stderr: $(head -c 300 "$tmp/err")"
grep -q "^ubjfs bench headline --quick: 4 workloads x 4 modes x 2 devices, virtual clock" "$tmp/out" ||
  fail "banner: $(head -n 1 "$tmp/out")"
grep -q "^scale: postmark " "$tmp/out" || fail "no scale line"
for d in $devices; do
  for w in $workloads; do
    for m in $modes; do
      n=$(awk -v w="$w" -v d="$d" -v m="$m" '$1 == w && $2 == d && $3 == m && $4 > 0' "$tmp/out" | wc -l)
      [ "$n" = 1 ] || fail "table: $n rows for $w $d $m"
    done
    awk -v w="$w" -v d="$d" '$1 == w && $2 == d && $4 ~ /^\(/' "$tmp/out" | grep -q . ||
      fail "ratios: no line for $w on $d"
  done
done
grep -q "thr ubj/ordered *time ubj/ordered *thr ubj/journal *time ubj/journal" "$tmp/out" ||
  fail "ratio header"
grep -Eq "^geometric mean +\(all pairs\) +[0-9.]+ \([-+][0-9.]+%\)" "$tmp/out" || fail "geometric mean line"
grep -Eq "^arithmetic mean +\(all pairs\) +[0-9.]+ \([-+][0-9.]+%\)" "$tmp/out" || fail "arithmetic mean line"
grep -q "^note: --quick runs at a tiny scale as a smoke test; its figures are not results" "$tmp/out" ||
  fail "no --quick caveat"
grep -q "ckpt_MiB is the part of data + meta" "$tmp/out" || fail "no note that ckpt is part of data + meta"
grep -q "^wall time: " "$tmp/out" || fail "no wall time line"
check_csv "$res/results.csv" 32
check_json "$res/results.json" 32
grep -q "^workload " "$res/table.txt" || fail "table.txt"
if command -v gnuplot >/dev/null; then
  for f in throughput-ssd-sata.svg throughput-hdd-modern7200.svg bytes-ssd-sata.svg \
           bytes-hdd-modern7200.svg; do
    [ -s "$res/$f" ] && grep -q "<svg" "$res/$f" || fail "plot $f missing or not SVG"
  done
  grep -q "^results in $res/: .*throughput-ssd-sata.svg bytes-ssd-sata.svg" "$tmp/out" ||
    fail "summary does not list the SVG files: $(grep '^results in' "$tmp/out")"
else
  skip_part "the plots (gnuplot is not installed: scripts/install-deps)"
fi

# the same results dir again without gnuplot (PATH without it): the SVG
# files of the run above are gone, none is listed, a warning says why
mkdir "$tmp/nogp"
run 0 env PATH="$tmp/nogp" "$UBJ_TOOL" bench --quick -q --results "$res"
grep -q "gnuplot is not installed" "$tmp/err" || fail "no gnuplot warning: $(cat "$tmp/err")"
grep "^results in" "$tmp/out" | grep -q "svg" && fail "summary lists SVG files: $(grep '^results in' "$tmp/out")"
ls "$res"/*.svg >/dev/null 2>&1 && fail "stale SVG files left: $(ls "$res")"
[ -s "$res/plots.gp" ] || fail "no plots.gp without gnuplot"

# bench run: the same command twice -> the same CSV, byte for byte
one=(run -w postmark,varmail -m ubj,ordered -d ssd:sata --scale 0.02 --ops 150 -q)
run 0 "$UBJ_TOOL" bench "${one[@]}" --csv "$tmp/a.csv" --json "$tmp/a.json" --plot "$tmp/plots"
grep -q "^ubjfs bench run: 2 workloads x 2 modes x 1 device, virtual clock, seed 1" "$tmp/out" ||
  fail "run banner: $(head -n 1 "$tmp/out")"
check_csv "$tmp/a.csv" 4
check_json "$tmp/a.json" 4
run 0 "$UBJ_TOOL" bench "${one[@]}" --csv "$tmp/b.csv"
cmp -s "$tmp/a.csv" "$tmp/b.csv" || fail "two runs with the same seed differ: $(diff "$tmp/a.csv" "$tmp/b.csv" | head -5)"
# --readahead off: the read path is named in the banner and the JSON, and
# a cold sequential read (iozone) costs fewer device requests than off-page
ra=(run -w iozone -m none -d ssd:sata --scale 0.5 --cache 4M -q)
run 0 "$UBJ_TOOL" bench "${ra[@]}" --csv "$tmp/ra-page.csv" --json "$tmp/ra-page.json"
grep -q "^read path:" "$tmp/out" && fail "a read path line without --readahead"
run 0 "$UBJ_TOOL" bench "${ra[@]}" --readahead off --csv "$tmp/ra-off.csv" --json "$tmp/ra-off.json"
grep -q "^read path: off (--readahead)" "$tmp/out" || fail "no read path line: $(head -n 3 "$tmp/out")"
python3 - "$tmp/ra-page.json" "$tmp/ra-off.json" <<'PY' || fail "--readahead off: not fewer, cheaper reads"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["config"]["readahead"] == "off-page" and b["config"]["readahead"] == "off"
ra, rb = a["results"][0], b["results"][0]
assert rb["elapsed_ns"] < ra["elapsed_ns"], (ra["elapsed_ns"], rb["elapsed_ns"])
PY
run 0 "$UBJ_TOOL" bench "${one[@]}" --csv "$tmp/c.csv" --seed 2
cmp -s "$tmp/a.csv" "$tmp/c.csv" && fail "seeds 1 and 2 gave identical counters"
if command -v gnuplot >/dev/null; then
  [ -s "$tmp/plots/throughput-ssd-sata.svg" ] && [ -s "$tmp/plots/bytes-ssd-sata.svg" ] || fail "run --plot"
fi

# a trace of varmail: replayed without -w it is varmail's (and says so)
run 0 "$UBJ_TOOL" bench run -w varmail -m ubj -d ssd:sata --scale 0.02 --ops 20 -q \
  --trace-out "$tmp/vm.trace"
run 0 "$UBJ_TOOL" bench run -m ubj -d ssd:sata -q --trace-in "$tmp/vm.trace"
grep -q "^trace: replaying $tmp/vm.trace open-loop (workload varmail" "$tmp/out" ||
  fail "trace replay banner: $(head -n 3 "$tmp/out")"
grep -q "^varmail " "$tmp/out" || fail "trace replay rows"
printf 'ubjfs-bench-trace 1\nworkload varmail\ngarbage\n' >"$tmp/bad.trace"

# output paths that cannot be written: one line, exit 1, before any run
# (nothing on stdout: not even the banner)
for bad in "--csv /proc/nope.csv" "--json /nonexistent/x.json" "--csv $tmp" \
           "--plot /dev/null" "--trace-out /nonexistent/t"; do
  # shellcheck disable=SC2086
  run 1 "$UBJ_TOOL" bench run -w postmark -m ubj -d ssd:sata --ops 5 --scale 0.02 -q $bad
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "bench run $bad: not one line: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "bench run $bad ran: $(head -n 1 "$tmp/out")"
done
for bad in /proc/nope /dev/null; do
  run 1 "$UBJ_TOOL" bench --quick -q --results "$bad"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "bench --results $bad: not one line: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "bench --results $bad ran: $(head -n 1 "$tmp/out")"
done

# bench modes: an unknown -m name is a usage error (not an empty table)
for bad in "bogus" "bogus,none" "ubj," ""; do
  run 2 "$UBJ_TOOL" bench modes -m "$bad" -n 10
  head -n 1 "$tmp/err" | grep -q "^ubjfs bench: unknown mode '" || fail "bench modes -m '$bad': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "bench modes -m '$bad' printed on stdout"
done

# usage errors: exit 2, first line "ubjfs bench: ...", then the --help hint
for bad in "run --bogus" "run -w nosuch" "run -m nosuch" "run -d nosuch:x" "run -d ssd:nosuch" \
           "run --scale 0" "run --scale x" "run --ops 0" "run --think 5h" "run --clock wall" \
           "run --cache 1K" "run --nvm-profile nosuch" "run extra" "run --quick" \
           "run --readahead oracle" "run --readahead linux:7" "run --readahead" \
           "run --trace-out $tmp/t" "run -w postmark,varmail --trace-in $tmp/t" \
           "headline --results" "--quick --seed x" "run -w" "run --kv nosuch=1" \
           "run -w postmark,iozone --kv files=10" "--quick --kv nosuch=1" \
           "run --trace-in $tmp/nonexistent" "run --trace-in $tmp/bad.trace" \
           "run --trace-in /etc/hostname" "run -w postmark --trace-in $tmp/vm.trace" \
           "run --trace-in $tmp/vm.trace --scale 2" "-q --bogus" "--clock wall" \
           "-d nosuch:x --quick" "run -w postmark --kv files=abc" \
           "run -w iozone --kv pattern=nosuch" "run -w postmark --kv min=9,max=1" \
           "run -w postmark --kv files=10,files=20" "run -w postmark --kv files=0" \
           "run -w varmail --kv nfiles=0" "run -w ganger --kv files=0" \
           "run -w sqlite --kv rows=0" "run -w oltp --kv logsize=0" \
           "run -w postmark --kv files=0x10" "run -w postmark --kv files=1 --kv min=1" \
           "run -w postmark --kv files=5," "run -w iozone --kv pattern=write++read"; do
  # shellcheck disable=SC2086
  run 2 "$UBJ_TOOL" bench $bad
  head -n 1 "$tmp/err" | grep -q "^ubjfs bench: " || fail "bench $bad: message '$(head -n 1 "$tmp/err")'"
  [ "$(wc -l <"$tmp/err")" -le 2 ] || fail "bench $bad: more than one line: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "bench $bad printed on stdout"
done
# a file set larger than the default image: without --image the run is
# repeated on an image that holds it; with --image it fails and says so
run 0 "$UBJ_TOOL" bench run -w fileserver -m none -d ram --scale 0.4 --ops 5 -q \
  --csv "$tmp/big.csv"
run 1 "$UBJ_TOOL" bench run -w fileserver -m none -d ram --scale 0.4 --ops 5 -q \
  --image 64M --csv "$tmp/small.csv"
grep -q "raise image_blocks" "$tmp/err" || fail "--image 64M: no 'raise image_blocks' message"
# ... but not on an image larger than half the free memory (a RAM device):
# it fails at once instead of running the machine out of memory
run 1 "$UBJ_TOOL" bench run -w fileserver -m none -d ram --scale 0.01 --ops 5 -q \
  --kv filesize=1g --csv "$tmp/huge.csv"
grep -q "more than half the free memory" "$tmp/err" || fail "filesize=1g: $(head -n 2 "$tmp/err")"
run 0 "$UBJ_TOOL" bench run --help
grep -q "^Usage: ubjfs bench run" "$tmp/out" || fail "bench run --help"
run 0 "$UBJ_TOOL" bench -h micro            # help, whatever follows it
grep -q "^Usage: ubjfs bench" "$tmp/out" || fail "bench -h micro: no help"
for sub in run headline micro ubj modes; do  # -h as --help everywhere
  run 0 "$UBJ_TOOL" bench $sub -h
  grep -q "^Usage: ubjfs bench" "$tmp/out" || fail "bench $sub -h: no help"
done

[ "$fails" -eq 0 ] && echo "tools bench_run: all checks passed"
exit $((fails > 0))
