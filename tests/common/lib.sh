# tests/common/lib.sh -- the preamble every shell test shares.  Source it
# as `. "$(dirname "$0")/../common/lib.sh" NAME`.  It turns on
# `set -Eeuo pipefail` (a command that fails unexpectedly ends the test,
# and an ERR trap names its line), skips (tests/common/skip.bash: exit 77,
# a failure under CI=true) when the tool is not built, makes $tmp and
# $shm (a second scratch directory on tmpfs where there is one, else
# $tmp; both removed at exit), and defines
#   fail MSG...        count a failed check and go on; at exit the test
#                      fails (exit 1) if any check failed, whatever the
#                      script's own exit status (the EXIT trap, lib_exit)
#   run WANT CMD...    run CMD, output in $tmp/out and $tmp/err, and fail
#                      unless it exits WANT or if a sanitizer reported.
#   skip_part REASON   some checks cannot run here: say so; under CI=true
#                      that is a failed check (skip.bash)
# tests/tools/harness.sh proves that a failed check fails the script.
set -Eeuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/skip.bash"
. "$(dirname "${BASH_SOURCE[0]}")/proc.bash"
. "$(dirname "${BASH_SOURCE[0]}")/python.bash"
: "${UBJ_TOOL:?UBJ_TOOL must name the built ubjfs binary}"
[ -x "$UBJ_TOOL" ] || test_skip "$UBJ_TOOL is not built"
fails=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ubjfs-${1:-test}.XXXXXX")
shm=$tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  shm=$(mktemp -d "/dev/shm/ubjfs-${1:-test}.XXXXXX")
fi

# lib_exit -- the EXIT trap: remove the scratch directories; exit 1 if a
# check failed (a script that forgets to look at $fails still fails)
lib_exit() {
  local rc=$?
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp" "$shm" || true
  if [ "$fails" -gt 0 ]; then
    echo "FAIL: $fails check(s) failed"
    exit 1
  fi
  exit "$rc"
}
trap lib_exit EXIT
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: \`$BASH_COMMAND\` exited $?" >&2' ERR

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip_part() {
  if [ "${CI:-}" = true ]; then fail "CI=true, so these checks may not be left out: $*"; fi
  echo "note: not checked: $*"
}
run() {
  local want=$1 rc=0
  shift
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq "$want" ] || fail "$* -> exit $rc, want $want; stderr: $(head -c 600 "$tmp/err")"
  if grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err"; then
    fail "$*: sanitizer report: $(head -c 400 "$tmp/err")"
  fi
  return 0
}
