# tests/tools/evcheck.sh -- the event checker (src/txn/evcheck.c;
# docs/DESIGN.md, "The event checker") is on in every run that asks for
# it, in each kind of mount the suite makes, and CI asks for it:
#  - with UBJ_CHECK_EVENTS=1 in the environment (scripts/test exports it
#    for its test passes), a dropped event (UBJ_TEST_DROP_EVENT=dirent_add)
#    aborts with the checker's one line (status 134): a tool's own mount
#    (ubjfs cp into an image), the crash explorer's workloads (crashtest,
#    mode ordered, depth 1), a FUSE mount (the daemon, on a create; where
#    /dev/fuse works); without the drop the same runs pass;
#  - without UBJ_CHECK_EVENTS=1 this run has no checker to prove: a skip,
#    and under CI=true a failure (every test pass of scripts/test runs the
#    suite with the checker on: one that silently lost it fails here);
#  - a build without UBJ_TEST_HOOKS (read from the build's CMakeCache.txt)
#    has no checker: a skip, also under CI=true (CI's test builds have it).
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" evcheck
cache=$(dirname "$UBJ_TOOL")/CMakeCache.txt
if ! grep -Eq '^UBJ_TEST_HOOKS:BOOL=(ON|1|TRUE)$' "$cache" 2>/dev/null; then
  test_skip_fact "a build without UBJ_TEST_HOOKS has no event checker"
fi
[ "${UBJ_CHECK_EVENTS:-}" = 1 ] ||
  test_skip "UBJ_CHECK_EVENTS=1 is not set: this run has no event checker to prove (scripts/test sets it)"

# caught WHAT -- the last run aborted with the checker's line
caught() {
  grep -q '^ubjfs event check: block [0-9]* ' "$tmp/err" ||
    fail "$1: a dropped dirent_add was not caught: $(head -c 400 "$tmp/err")"
}

# a tool's own mount: copy a file into an image
img=$tmp/t.img
echo data >"$tmp/f"
run 0 "$UBJ_TOOL" mkfs -q --size 16M "$img"
UBJ_TEST_DROP_EVENT=dirent_add run 134 "$UBJ_TOOL" cp "$tmp/f" "$img:/f"
caught "ubjfs cp"
run 0 "$UBJ_TOOL" mkfs -q -f --size 16M "$img"
run 0 "$UBJ_TOOL" cp "$tmp/f" "$img:/f"

# the crash explorer's workloads (bash reports each expected abort)
ct=(crashtest --mode ordered --depth 1 --pairs 0 --out "$tmp")
UBJ_TEST_DROP_EVENT=dirent_add run 134 "$UBJ_TOOL" "${ct[@]}"
caught "ubjfs crashtest"
run 0 "$UBJ_TOOL" "${ct[@]}"

# a FUSE mount: the daemon in the foreground, its stderr kept
fuse_dropped() {
  local mnt=$tmp/mnt i pid rc=0
  mkdir "$mnt"
  run 0 "$UBJ_TOOL" mkfs -q -f --size 16M "$img"
  UBJ_TEST_DROP_EVENT=dirent_add "$UBJ_TOOL" mount -f "$img" "$mnt" 2>"$tmp/err" &
  pid=$!
  for ((i = 0; i < 300; i++)); do
    mountpoint -q "$mnt" && break
    sleep 0.1
  done
  if ! mountpoint -q "$mnt"; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" || true
    fail "ubjfs mount: no mount after 30 s: $(head -c 400 "$tmp/err")"
    return
  fi
  if touch "$mnt/x" 2>/dev/null; then
    fail "ubjfs mount: a create with its dirent_add dropped succeeded"
    fusermount3 -u "$mnt" || true        # the daemon lives: end it
  fi
  wait "$pid" || rc=$?
  fusermount3 -u -z "$mnt" 2>/dev/null || true   # the dead mount, if aborted
  [ "$rc" -eq 134 ] || fail "ubjfs mount: the daemon exited $rc, want 134 (abort)"
  caught "ubjfs mount"
}
if [ ! -e /dev/fuse ]; then
  echo "note: not checked: a FUSE mount (no /dev/fuse in this kernel or container)"
elif [ ! -r /dev/fuse ] || [ ! -w /dev/fuse ] || ! command -v fusermount3 >/dev/null ||
     ! command -v mountpoint >/dev/null; then
  skip_part "a FUSE mount (/dev/fuse not usable by uid $(id -u), or no fusermount3)"
else
  fuse_dropped
fi
