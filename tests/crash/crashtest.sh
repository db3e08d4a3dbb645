# tests/crash/crashtest.sh -- `ubjfs crashtest` (issue 8): usage errors;
# every workload file under tests/crash/workloads/ explored in ubj,
# ordered and journal with no failure; mode none reported inconsistent
# with a minimized reproducer that replays (and fails again), under
# either persistence model (--persist: write-through also explored in ubj,
# ordered and journal over the workload files); broken
# variants (--break, a test build's) caught with exit 1 (handle-no-wait in
# ubj and the journal modes, on overlap.wl); a plain build
# (without UBJ_TEST_HOOKS) refuses --break as an unknown option.  The quick pass itself is
# tests/crash/quick.sh.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" crashtest
wl=$UBJ_SRC/tests/crash/workloads

# --- usage -------------------------------------------------------------------
run 0 "$UBJ_TOOL" crashtest --help
grep -q -- "--workload FILE" "$tmp/out" || fail "help lacks --workload"
grep -q -- "--persist MODEL" "$tmp/out" || fail "help lacks --persist"
run 2 "$UBJ_TOOL" crashtest --mode bogus
run 2 "$UBJ_TOOL" crashtest --break bogus
run 2 "$UBJ_TOOL" crashtest --k 99
run 2 "$UBJ_TOOL" crashtest --persist bogus
grep -q "volatile' or 'write-through" "$tmp/err" || fail "--persist bogus: $(cat "$tmp/err")"
run 2 "$UBJ_TOOL" crashtest extra-arg
printf 'write /f 3 16\n' >"$tmp/bad.wl"
run 2 "$UBJ_TOOL" crashtest --workload "$tmp/bad.wl"
grep -q "bad.wl:1: write" "$tmp/err" || fail "no line number for a bad workload: $(cat "$tmp/err")"
[ "$(grep -c "bad.wl" "$tmp/err")" -eq 1 ] || fail "a bad workload reported more than once: $(cat "$tmp/err")"

# --- the workload files: no failure in the consistent modes ------------------
args=()
for f in "$wl"/*.wl; do args+=(--workload "$f"); done
[ "${#args[@]}" -ge 10 ] || fail "fewer than 5 workload files in $wl"
run 0 "$UBJ_TOOL" crashtest --samples 2 --dcrash 0 --out "$tmp" "${args[@]}"
grep -q "^total: [0-9]* states explored" "$tmp/out" || fail "no total line: $(cat "$tmp/out")"
states=$(sed -n 's/^total: \([0-9]*\) states.*/\1/p' "$tmp/out")
[ "${states:-0}" -gt 1000 ] || fail "only ${states:-0} states for the workload files"
for m in ubj ordered journal; do
  grep -q "^mode $m .* 0 failures" "$tmp/out" || fail "mode $m line: $(cat "$tmp/out")"
done

# --- the write-through model: the same files in ordered and journal, two in ubj
run 0 "$UBJ_TOOL" crashtest --persist write-through --samples 2 --dcrash 0 --out "$tmp" \
  --mode ordered --mode journal "${args[@]}"
for m in ordered journal; do
  grep -q "^mode $m .* 0 failures" "$tmp/out" || fail "write-through: mode $m: $(cat "$tmp/out")"
done
run 0 "$UBJ_TOOL" crashtest --persist write-through --samples 2 --dcrash 0 --out "$tmp" \
  --mode ubj --workload "$wl/overwrite-cow.wl" --workload "$wl/rename-over.wl"
grep -q "^mode ubj .* 0 failures" "$tmp/out" || fail "write-through: mode ubj: $(cat "$tmp/out")"

# --- random workloads alone ---------------------------------------------------
run 0 "$UBJ_TOOL" crashtest --depth 0 --random 2 --ops 24 --mode ordered --mode ubj \
  --samples 2 --dcrash 0 --out "$tmp"
grep -q "^mode ordered  *2 workloads" "$tmp/out" || fail "random: $(cat "$tmp/out")"

# --- none is inconsistent: reported, with a reproducer that fails again -------
mkdir -p "$tmp/r"
run 1 "$UBJ_TOOL" crashtest --mode none --out "$tmp/r" --workload "$wl/rename-over.wl"
grep -q "^FAIL mode none" "$tmp/out" || fail "none: no FAIL line: $(cat "$tmp/out")"
repro=$(ls "$tmp"/r/crash-none-*.wl 2>/dev/null | head -n 1 || true)
if [ -z "$repro" ]; then
  fail "none: no reproducer written"
else
  grep -q "^# crash point: " "$repro" || fail "reproducer lacks the crash point: $(cat "$repro")"
  grep -q "^begin$" "$repro" || fail "reproducer lacks 'begin'"
  run 1 "$UBJ_TOOL" crashtest --mode none --out "$tmp/r" --workload "$repro"
fi
# ... under write-through too, and its reproducer replays under it
mkdir -p "$tmp/rw"
run 1 "$UBJ_TOOL" crashtest --mode none --persist write-through --out "$tmp/rw" \
  --workload "$wl/rename-over.wl"
repro=$(ls "$tmp"/rw/crash-none-*.wl 2>/dev/null | head -n 1 || true)
if [ -z "$repro" ]; then
  fail "none, write-through: no reproducer written"
else
  grep -q "^# replay: .*--persist write-through" "$repro" ||
    fail "write-through reproducer does not replay under it: $(cat "$repro")"
  grep -q "^# crash point: .*write-through cut" "$repro" ||
    fail "write-through reproducer: crash point $(grep 'crash point' "$repro")"
  run 1 "$UBJ_TOOL" crashtest --mode none --persist write-through --out "$tmp/rw" \
    --workload "$repro"
fi

# --- broken variants are caught (a test build's: UBJ_TEST_HOOKS) ---------------
run 0 "$UBJ_TOOL" crashtest --help
if test_hooks; then
  grep -q -- "--break NAME     TEST BUILDS ONLY" "$tmp/out" ||
    fail "test build: help does not say --break is for test builds: $(cat "$tmp/out")"
  run 1 "$UBJ_TOOL" crashtest --mode ubj --break ubj-commit-persist --out "$tmp/r" \
    --workload "$wl/overwrite-cow.wl"
  run 1 "$UBJ_TOOL" crashtest --mode journal --break journal-commit-flush --out "$tmp/r" \
    --workload "$wl/overwrite-cow.wl"
  # a variant that breaks none of the modes run is refused (before: those
  # modes ran unbroken and "passed")
  run 2 "$UBJ_TOOL" crashtest --mode ordered --break ubj-commit-persist --out "$tmp/r"
  grep -q "changes none of the modes run" "$tmp/err" ||
    fail "--break of another mode: $(cat "$tmp/err")"
  run 2 "$UBJ_TOOL" crashtest --mode none --break journal-commit-flush --out "$tmp/r"
  # the commit barrier: an fsync that does not wait commits half a create
  for m in ubj ordered journal writeback; do
    run 1 "$UBJ_TOOL" crashtest --mode $m --break handle-no-wait --out "$tmp/r" \
      --workload "$wl/overlap.wl"
  done
else
  # a plain build has no broken variant: --break is an unknown option
  grep -q -- "--break" "$tmp/out" && fail "plain build: help names --break: $(cat "$tmp/out")"
  run 2 "$UBJ_TOOL" crashtest --break ubj-commit-persist
  grep -q "unrecognized option '--break" "$tmp/err" ||
    fail "plain build: --break not refused as an unknown option: $(cat "$tmp/err")"
  skip_part "broken variants caught (--break): a build without UBJ_TEST_HOOKS"
fi
[ "$fails" -eq 0 ] || exit 1
