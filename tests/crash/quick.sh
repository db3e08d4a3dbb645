# tests/crash/quick.sh -- the CI pass of the crash explorer: `ubjfs
# crashtest --quick` (generated ACE-style workloads in ubj, ordered,
# journal, writeback and sync -- sync under the integrity oracle --,
# crashes during recovery included, and in a test
# build the two overlapping operations of cx_workload_overlap) must find
# no failure and
# explore a meaningful number of states; and the same under the
# write-through persistence model in the journal modes and sync.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" crashquick
# an ASan build explores writeback under the write-through model only (its
# recovery is ordered's; 41 s of the 346 this test took there, the
# longest of the ASan pass); the gcc and clang passes explore it under both
wb="--mode writeback"
if asan_build; then
  wb=""
fi
# shellcheck disable=SC2086  # $wb: an option, split on purpose
run 0 "$UBJ_TOOL" crashtest --quick --mode ubj --mode ordered --mode journal $wb \
  --mode sync --out "$tmp"
cat "$tmp/out"
states=$(sed -n 's/^total: \([0-9]*\) states.*/\1/p' "$tmp/out")
[ "${states:-0}" -gt 5000 ] || fail "the quick pass explored only ${states:-0} states"
ls "$tmp"/crash-*.wl >/dev/null 2>&1 && fail "reproducers written: $(ls "$tmp")"
# the journal modes under the write-through model (about 2 s; mode ubj's
# device states under it are the same as under a volatile cache in a
# correct run -- every write is flushed by each fence -- and are checked by
# tests/crash/crashtest.sh and explore.c)
run 0 "$UBJ_TOOL" crashtest --quick --persist write-through --mode ordered --mode journal \
  --mode writeback --mode sync --out "$tmp"
cat "$tmp/out"
states=$(sed -n 's/^total: \([0-9]*\) states.*/\1/p' "$tmp/out")
[ "${states:-0}" -gt 3000 ] || fail "write-through: the quick pass explored only ${states:-0} states"
ls "$tmp"/crash-*.wl >/dev/null 2>&1 && fail "write-through: reproducers written: $(ls "$tmp")"
[ "$fails" -eq 0 ] || exit 1
