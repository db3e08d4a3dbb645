# tests/bench_cli/bench_ordering.sh -- `ubjfs bench ordering` (issue 21
# item 5) on its --tiny grid (a second or two): workloads ganger and andrew
# x users 1 and 2 x every mode of the study this build has, on the virtual
# clock, plus ganger with 4 users in every mode on the real clock and, the
# same sizes, on the virtual clock.  A
# table row and a progress line per run; the CSV has the documented
# columns and a line per run, the JSON as many cells; the figures are sane
# (transactions, write requests and bytes written > 0, the slowest user no
# faster than the mean, a workload's phases adding up to its task time,
# andrew's five phases and ganger's two by name, the virtual clock's users
# serialised, x_sync 1 for sync itself), sync -- the conventional scheme --
# issues at least as many write requests as none in every configuration
# and is no faster on any (when this build has mode sync); a second run
# gives byte-identical virtual-clock CSV lines; plots are SVG files when
# gnuplot is installed; bad options are usage errors (exit 2).  Not a timed
# test: no figure is compared to a bound of wall time.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" bench_ordering
command -v python3 >/dev/null || test_skip "python3 is not installed (scripts/install-deps)"

run 0 "$UBJ_TOOL" bench ordering --tiny -u 1 -u 2 --csv "$tmp/a.csv" --json "$tmp/a.json" \
  --plots "$tmp/plots"
nmodes=$(python3 -c 'import csv,sys; print(len({r["mode"] for r in csv.DictReader(open(sys.argv[1]))}))' "$tmp/a.csv")
want=$((2 * 2 * nmodes + 2 * nmodes))
rows=$(awk '($2 == "virtual" || $2 == "real") && $3 ~ /^[0-9]+$/' "$tmp/out" | wc -l)
[ "$rows" = "$want" ] || fail "table: $rows rows, want $want"
[ "$(grep -c "^\[[0-9]*/$want\] " "$tmp/err")" = "$want" ] || fail "not a progress line per run"
python3 - "$tmp/a.csv" "$tmp/a.json" "$want" <<'PY' || fail "CSV/JSON or the figures do not check"
import csv, json, sys
cols = ("workload,clock,device,users,mode,kv,cache_blocks,ops,elapsed_ns,sync_ns,"
        "user_mean_ns,user_max_ns,user_ns,phases,phase_ns,dev_reads,dev_writes,"
        "dev_flushes,bytes_written,bytes_data,bytes_metadata,bytes_journal,"
        "txn_overlap_max,x_sync").split(",")
rows = list(csv.DictReader(open(sys.argv[1])))
assert list(rows[0].keys()) == cols, rows[0].keys()
assert len(rows) == int(sys.argv[3])
j = json.load(open(sys.argv[2]))
assert j["schema"] == "ubjfs-bench-ordering/1" and len(j["cells"]) == len(rows)
assert j["device"] == "hdd:hp_c2249a"
modes = []
for r in rows:
    if r["mode"] not in modes:
        modes.append(r["mode"])
assert {"none", "ordered", "ubj"} <= set(modes), modes
for r in rows:
    n = {k: int(r[k]) for k in ("ops", "dev_writes", "bytes_written", "user_mean_ns",
                                "user_max_ns", "elapsed_ns", "txn_overlap_max")}
    assert n["ops"] > 0 and n["dev_writes"] > 0 and n["bytes_written"] > 0, r
    assert 0 < n["user_mean_ns"] <= n["user_max_ns"] <= n["elapsed_ns"], r
    users = [int(x) for x in r["user_ns"].split(";")]
    assert len(users) == int(r["users"]) and max(users) == n["user_max_ns"], r
    assert sum(users) // len(users) == n["user_mean_ns"], r
    ph = [int(x) for x in r["phase_ns"].split(";")]
    assert 0 <= n["user_mean_ns"] - sum(ph) <= len(ph), r
    want = "mkdir;copy;stat;read;compile" if r["workload"] == "andrew" else "copy;remove"
    assert r["phases"] == want, r
    if r["clock"] == "virtual":
        assert n["txn_overlap_max"] == 1, r
    else:
        assert r["workload"] == "ganger" and r["users"] == "4", r
        twin = [t for t in rows if t["clock"] == "virtual" and t["mode"] == r["mode"]
                and t["kv"] == r["kv"] and t["users"] == "4"]
        assert len(twin) == 1 and twin[0]["ops"] == r["ops"], (r, twin)
    assert r["device"] == "hdd:hp_c2249a"
cell = {(r["workload"], r["clock"], r["users"], r["mode"]): r for r in rows}
if "sync" in modes:
    for (w, c, u, m), r in cell.items():
        if m != "none":
            continue
        s = cell[(w, c, u, "sync")]
        assert int(s["dev_writes"]) >= int(r["dev_writes"]), (s, r)
        assert float(s["x_sync"]) == 1.0, s
        if c == "virtual":
            assert int(s["user_mean_ns"]) >= int(r["user_mean_ns"]), (s, r)
else:
    print("note: mode sync is not in this build: its checks were not run")
    assert all(r["x_sync"] == "" for r in rows)
PY
run 0 "$UBJ_TOOL" bench ordering --tiny -u 1 -u 2 --no-real -q --csv "$tmp/b.csv"
grep -v -e ',real,' -e '"files=6,dirs=2"' "$tmp/a.csv" >"$tmp/a2.csv"   # no twins
cmp -s "$tmp/a2.csv" "$tmp/b.csv" || fail "two runs differ (virtual clock)"
[ -s "$tmp/err" ] && fail "-q printed progress: $(head -n 2 "$tmp/err")"
if command -v gnuplot >/dev/null; then
  n=$(find "$tmp/plots" -name 'ordering-*.svg' -size +0 | wc -l)
  [ "$n" = 2 ] || fail "plots: $n SVG files, want 2"
else
  skip_part "gnuplot is not installed: no SVG checked"
fi
[ -s "$tmp/plots/plots.gp" ] || fail "no plots.gp"

run 0 "$UBJ_TOOL" bench ordering --tiny -w andrew -u 3 -m none --no-real
[ "$(awk '$2 == "virtual" && $3 == 3 && $4 == "none"' "$tmp/out" | wc -l)" = 1 ] ||
  fail "a chosen grid: $(cat "$tmp/out")"
for bad in "--mode bogus" "-w postmark" "-u 0" "-u 17" "--seed 0" "--full --tiny" \
           "-d nosuch:disk" "extra" "--bogus"; do
  # shellcheck disable=SC2086
  run 2 "$UBJ_TOOL" bench ordering $bad
  [ -s "$tmp/out" ] && fail "bench ordering $bad printed on stdout"
done
# an output that cannot be written fails before the first run
run 1 "$UBJ_TOOL" bench ordering --tiny --no-real --csv "$tmp/no/such/dir/o.csv"
[ -s "$tmp/out" ] && fail "--csv into a missing directory: ran first: $(head -n 2 "$tmp/out")"
echo "bench_ordering.sh: ok"
