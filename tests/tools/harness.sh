# tests/tools/harness.sh -- the shell tests' harness cannot hide a failure
# (issue 14, item 9 and 10).  Small scripts that source
# tests/common/lib.sh or tests/fuse/fuselib.bash run in a child bash, and
# their exit status is asserted:
#  - a check that failed (`fail`, or `run` with the wrong exit status)
#    fails the script even when the script never looks at $fails or ends
#    with `exit 0`; a skip after a failed check is a failure too;
#  - a command that fails unexpectedly, a failing stage of a pipeline and
#    an unset variable end the script at once (set -euo pipefail), with a
#    line naming the command;
#  - a script whose checks pass exits 0 and leaves no scratch directory;
#  - test_skip / fl_skip / fl_need exit 77, but 1 under CI=true;
#    test_skip_fact exits 77 under CI=true too; skip_part (some checks
#    left out) is a note, and a failed check under CI=true.
# Fails on fd8c42e: a script that counted a failure and did not check
# $fails exited 0; `false` in the middle of a script went on; the skips
# exited 77 under CI=true.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" harness
here=$(cd "$(dirname "$0")/.." && pwd)

# child WANT NAME BODY [ENV...] -- run BODY as a script after sourcing
# lib.sh; its exit status must be WANT; its output is in $tmp/NAME.out
child() {
  local want=$1 name=$2 body=$3 rc=0
  shift 3
  printf '. %q/common/lib.sh %q\necho "scratch: $tmp ${shm:-}"\n%s\n' "$here" "$name" "$body" \
    >"$tmp/$name.sh"
  env -u CI "$@" TMPDIR="$tmp" bash "$tmp/$name.sh" >"$tmp/$name.out" 2>&1 || rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$tmp/$name.out")"
}
# fuse_child WANT NAME BODY [ENV...] -- the same with tests/fuse/fuselib.bash
fuse_child() {
  local want=$1 name=$2 body=$3 rc=0
  shift 3
  printf '. %q/fuse/fuselib.bash\n%s\n' "$here" "$body" >"$tmp/$name.sh"
  env -u CI "$@" bash "$tmp/$name.sh" >"$tmp/$name.out" 2>&1 || rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$tmp/$name.out")"
}
# has NAME TEXT -- the child's output has TEXT
has() { grep -qF -- "$2" "$tmp/$1.out" || fail "$1: output lacks '$2': $(cat "$tmp/$1.out")"; }
# lacks NAME TEXT -- the child's output lacks TEXT
lacks() { if grep -qF -- "$2" "$tmp/$1.out"; then fail "$1: output has '$2'"; fi; }

# --- counted checks: the EXIT trap fails the script --------------------------
child 0 pass 'fail_none=1; run 0 true; echo done'
has pass "done"
has pass "scratch: "
for d in $(sed -n 's/^scratch: //p' "$tmp/pass.out"); do
  [ ! -e "$d" ] || fail "a passing script left its scratch directory $d"
done
child 1 unchecked 'fail "deliberate"; echo after'
has unchecked "after"                           # counted: the script goes on
has unchecked "FAIL: 1 check(s) failed"
child 1 exit0 'fail "deliberate"; exit 0'
child 1 runwrong 'run 0 false; run 1 true; echo "fails=$fails"'
has runwrong "fails=2"
child 1 skipafter 'fail "deliberate"; test_skip "a reason"'

# --- unexpected failures end the script at once --------------------------------
child 1 errexit 'false; echo after'
lacks errexit after
has errexit '`false` exited 1'
child 1 pipefail 'false | cat; echo after'
lacks pipefail after
child 1 unset 'echo "$no_such_variable"; echo after'
lacks unset after
child 1 infunc 'f() { false; echo in-f-after; }; f; echo after'
lacks infunc in-f-after
child 3 exitcode 'exit 3'

# --- skips: 77, and a failure under CI=true --------------------------------
child 77 skip 'test_skip "no frobnicator"'
has skip "SKIP: no frobnicator"
child 1 skipci 'test_skip "no frobnicator"' CI=true
has skipci "CI=true, so this may not skip: no frobnicator"
child 77 fact 'test_skip_fact "no /dev/fuse"' CI=true
child 1 notbuilt 'echo unreachable' UBJ_TOOL=/nonexistent/ubjfs CI=true
child 0 part 'skip_part "the plots"'
has part "note: not checked: the plots"
child 1 partci 'skip_part "the plots"' CI=true
lacks notbuilt unreachable
fuse_child 77 flneed 'fl_need no-such-program-here' "UBJ_TOOL=$UBJ_TOOL"
has flneed "SKIP: no-such-program-here is not installed"
fuse_child 1 flneedci 'fl_need no-such-program-here' "UBJ_TOOL=$UBJ_TOOL" CI=true
has flneedci "CI=true, so this may not skip"
fuse_child 1 flskipci 'fl_skip "no mode"' "UBJ_TOOL=$UBJ_TOOL" CI=true
fuse_child 1 flerrexit 'false; echo after' "UBJ_TOOL=$UBJ_TOOL"
lacks flerrexit after

[ "$fails" -eq 0 ] && echo "tools harness: all checks passed"
