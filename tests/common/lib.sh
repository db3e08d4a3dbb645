# tests/common/lib.sh -- the preamble every shell test shares.  Source it
# as `. "$(dirname "$0")/../common/lib.sh" NAME`: it skips (exit 77) when
# the tool is not built, makes $tmp (removed at exit), and defines
#   fail MSG...        count a failure (the test exits non-zero at the end
#                      when it checks $fails)
#   run WANT CMD...    run CMD, output in $tmp/out and $tmp/err, and fail
#                      unless it exits WANT or if a sanitizer reported.
set -u
: "${UBJ_TOOL:?UBJ_TOOL must name the built ubjfs binary}"
[ -x "$UBJ_TOOL" ] || { echo "skip: $UBJ_TOOL is not built"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ubjfs-${1:-test}.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "$* -> exit $rc, want $want; stderr: $(head -c 600 "$tmp/err")"
  if grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err"; then
    fail "$*: sanitizer report: $(head -c 400 "$tmp/err")"
  fi
  return 0
}
