# tests/tools/trialmode.sh -- the test-only mode `trial` (src/txn/trial.c:
# one file plus one entry in src/txn/registry.c, nothing else) shows up in
# every tool that takes a mode, as the registry promises (docs/DESIGN.md,
# "Adding a consistency mode"):
#  - --help: mkfs's and crashtest's --mode lists and bench modes' --modes
#    list name it (fsck and inspect list no modes; bench's and bench run's
#    name the headline set, which trial is not in);
#  - runs: mkfs --mode trial, fsck (clean), inspect (its name and code),
#    a file copied in and out of the image mounted in its recorded mode,
#    fsck again; bench micro, bench modes and bench run in mode trial;
#    crashtest --mode trial, whose counts equal mode none's (trial runs
#    none's operations) but for the name -- without random samples, which
#    the mode's name seeds.
# Only a test build has the mode: a build without UBJ_TEST_HOOKS (read from
# the build's CMakeCache.txt, not from the tool, so that a mode that failed
# to register cannot pass as a skip) skips with its reason.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" trialmode
cache=$(dirname "$UBJ_TOOL")/CMakeCache.txt
if ! grep -Eq '^UBJ_TEST_HOOKS:BOOL=(ON|1|TRUE)$|^CMAKE_C_FLAGS:STRING=.*-DUBJ_TEST_HOOKS=1' \
     "$cache" 2>/dev/null; then
  test_skip_fact "a build without UBJ_TEST_HOOKS has no test-only mode trial"
fi

# help_has SUBCOMMAND... -- its --help names mode trial in a mode list
help_has() {
  run 0 "$UBJ_TOOL" "$@" --help
  grep -Eq '(^|[ ,])trial([ ,;)]|$)' "$tmp/out" || fail "$* --help: no mode trial"
}
help_has mkfs
help_has crashtest
help_has bench modes

img=$tmp/trial.img
run 0 "$UBJ_TOOL" mkfs --size 16M --mode trial "$img"
grep -q '^  mode: *trial$' "$tmp/out" || fail "mkfs: mode not trial"
run 0 "$UBJ_TOOL" fsck "$img"
run 0 "$UBJ_TOOL" inspect "$img"
grep -Eq '^  mode: +trial \(240\)$' "$tmp/out" || fail "inspect: mode not trial (240)"
head -c 100000 /dev/urandom >"$tmp/f"
run 0 "$UBJ_TOOL" cp "$tmp/f" "$img:/f"
run 0 "$UBJ_TOOL" cp "$img:/f" "$tmp/g"
cmp -s "$tmp/f" "$tmp/g" || fail "cp: the file read back differs"
run 0 "$UBJ_TOOL" fsck "$img"
run 0 "$UBJ_TOOL" inspect "$img"
grep -Eq '^  mode: +trial \(240\)$' "$tmp/out" || fail "inspect after a mount: mode not trial"

run 0 "$UBJ_TOOL" bench micro -m trial --ops 50 --size 16M
grep -q 'mode trial' "$tmp/out" || fail "bench micro: not in mode trial"
run 0 "$UBJ_TOOL" bench modes -m trial -n 10 -d ram -s 16M
grep -q '^trial ' "$tmp/out" || fail "bench modes: no row for trial"
run 0 "$UBJ_TOOL" bench run -w fileserver -m trial -d ram --scale 0.4 --ops 5 -q
grep -q ' trial ' "$tmp/out" || fail "bench run: no row for trial"

# crashtest: the same exploration as none (failures expected: neither
# promises anything after a crash), so exit 1 and equal counts; no random
# states (--samples 0, --dcrash 0): their seed includes the mode's name
counts() {
  grep -E '^mode ' "$tmp/out" | sed -E "s/^mode $1 +//; s/ +[0-9.]+ s +[0-9]+ states\/s//"
}
mkdir "$tmp/ct"
run 1 "$UBJ_TOOL" crashtest --mode none --depth 1 --pairs 0 --samples 0 --dcrash 0 --out "$tmp/ct"
want=$(counts none)
run 1 "$UBJ_TOOL" crashtest --mode trial --depth 1 --pairs 0 --samples 0 --dcrash 0 --out "$tmp/ct"
got=$(counts trial)
[ -n "$got" ] && [ "$got" = "$want" ] ||
  fail "crashtest: mode trial '$got', mode none '$want'"
ls "$tmp/ct"/crash-trial-*.wl >/dev/null 2>&1 || fail "crashtest: no reproducer for trial"
