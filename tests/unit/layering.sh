# tests/unit/layering.sh -- the boundaries issue 15 made true stay true:
# the file system names no mode (no mode ops symbol, no mode-private
# header or struct, no test of the mode's name: it calls the verbs of
# src/txn/mode.h), txn/ reads no file-system header, nvm/ and dev/ include
# nothing above them, and no layer tests a device's or a mode's identity
# by comparing ops tables (ubj_bdev_kind, the registry instead); the
# modes' on-disk codes and ops symbols appear nowhere outside src/txn/.
# Run by CTest with bash; UBJ_SRC = the source tree.  Exit 0 pass.
set -u
src=${UBJ_SRC:?UBJ_SRC not set}/src
bad=0
# no_match WHAT PATTERN DIR... -- fail if grep -E finds PATTERN
no_match() {
  local what=$1 pat=$2
  shift 2
  local hits
  hits=$(grep -rnE "$pat" "$@" --include='*.c' --include='*.h' || true)
  if [ -n "$hits" ]; then
    printf 'FAIL: %s:\n%s\n' "$what" "$hits"
    bad=1
  fi
}
no_match "txn/ includes a file-system header" '#include "fs/' "$src/txn"
no_match "fs/ includes a mode's private header" \
  '#include "txn/(ubj|journal|jformat)\.h"' "$src/fs"
no_match "fs/ names a mode" \
  'ubj_mode_is_journal|struct ubjm?_prep|&ubj_mode_(none|ubj|ordered|journal|writeback)|ubj_mode_(prepare|release)\b|ubjm_[a-z_]+\(|strcmp\([^)]*UBJ_MODE_' \
  "$src/fs"
no_match "fs/ calls a mode callback itself" 'ops->(prepare|release|mount|record|check_last|view)\(' "$src/fs"
no_match "nvm/ includes a layer above it" '#include "(cache|txn|fs)/' "$src/nvm"
no_match "dev/ includes a layer above it" '#include "(nvm|cache|txn|fs)/' "$src/dev"
# (a device type checking its own instance in its own file, as dev/fault.c
# and dev/record.c do, is no test across layers)
no_match "an ops-table identity test across layers" '(->|\.)?ops *[!=]= *&[a-z_]+' \
  "$src/util" "$src/nvm" "$src/cache" "$src/txn" "$src/fs" "$src/tools" "$src/crash" "$src/bench"
no_match "a mode's identity tested outside src/txn" '[!=]= *&ubj_mode_[a-z]+' \
  "$src/fs" "$src/tools" "$src/nvm" "$src/dev" "$src/cache"
no_match "a mode's on-disk code outside src/txn" 'UBJ_FMT_MODE_' \
  "$src/util" "$src/dev" "$src/nvm" "$src/cache" "$src/fs" "$src/tools" "$src/crash" \
  "$src/bench" "$src/fuse" "$src/../include"
no_match "a mode's ops symbol outside src/txn" '\bubj_mode_(none|ubj|ordered|journal|writeback|trial)\b' \
  "$src/util" "$src/dev" "$src/nvm" "$src/cache" "$src/fs" "$src/tools" "$src/crash" \
  "$src/bench" "$src/fuse" "$src/../include"
exit $bad
