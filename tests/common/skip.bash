# tests/common/skip.bash -- the one way a test script skips, sourced by
# tests/common/lib.sh and tests/fuse/fuselib.bash (not a test itself:
# CTest runs *.sh only).
#   test_skip REASON...       exit 77 with "SKIP: REASON"; under CI=true
#                             exit 1 instead, with the same one line
#   test_skip_fact REASON...  exit 77 even under CI=true: only for what a
#                             machine may genuinely lack (no /dev/fuse, a
#                             kernel without FUSE over io_uring) or a pass
#                             of scripts/test that leaves a test out on
#                             purpose
# CI (.ci/run sets CI=true) runs scripts/test as root after
# scripts/install-deps, so a missing program, a permission refused or a
# mount that cannot be made there is a broken CI machine: a skip would
# let a suite pass unseen.  tests/fuse/posix.c does the same in C.

# test_skip -- skip, or fail under CI=true
test_skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: CI=true, so this may not skip: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# test_skip_fact -- skip for a fact of the machine, also under CI=true
test_skip_fact() {
  echo "SKIP: $*"
  exit 77
}

# asan_build -- whether the tool is built with AddressSanitizer (CMake
# option UBJ_SANITIZE: scripts/test's third pass).  A few long tests run a
# smaller share of their work there, where a memory error is what they
# look for and the gcc and clang passes run all of it; each says so.
asan_build() {
  grep -q __asan_init "${UBJ_TOOL:?}"
}

# test_hooks -- whether the tool is a test build (CMake option
# UBJ_TEST_HOOKS: the deliberately broken variants, `crashtest --break`,
# UBJ_FUSE_BREAK_INIT).  CTest passes the option as UBJ_TEST_HOOKS (ON or
# OFF); run by hand without it, the tool's crashtest --help tells.  A test
# leaves out what needs the hooks with a one-line note where this fails
# (tests/common/lib.sh skip_part: a failure under CI=true, whose builds
# have the option on).
test_hooks() {
  case ${UBJ_TEST_HOOKS:-} in
    ON|on|1|TRUE|true|YES|yes) return 0;;
    OFF|off|0|FALSE|false|NO|no) return 1;;
  esac
  "${UBJ_TOOL:?}" crashtest --help 2>/dev/null | grep -q -- '--break NAME'
}
