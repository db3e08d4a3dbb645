# tests/common/python.bash -- which python3 the test scripts run, sourced
# by tests/common/lib.sh and tests/fuse/fuselib.bash (not a test itself).
# The scripts need only the standard library, so they prefer the
# distribution's interpreter (/usr/bin/python3) over the first python3 on
# PATH: a version manager's shim there (pyenv) costs 0.25 s a call idle
# and about 1 s under load, dozens of calls a CI pass.  It is put first on
# PATH through a directory holding only a python3 link, not a shell
# function: `python3 ... &` must leave $! naming python itself, so that
# `kill $!` ends it (a function would run in a forked shell, and the kill
# would leave python holding what it holds: tests/tools/lockwait.sh).
# Without /usr/bin/python3 the PATH one stays.
py_bin_dir=${TMPDIR:-/tmp}/ubjfs-python3.$(id -u)
if [ -x /usr/bin/python3 ] &&
  [ "$(command -v python3 2>/dev/null)" != /usr/bin/python3 ]; then
  if [ "$(readlink "$py_bin_dir/python3" 2>/dev/null)" != /usr/bin/python3 ]; then
    mkdir -p "$py_bin_dir" 2>/dev/null || true
    ln -sfn /usr/bin/python3 "$py_bin_dir/python3.$$" 2>/dev/null &&
      mv -f "$py_bin_dir/python3.$$" "$py_bin_dir/python3" 2>/dev/null || true
  fi
  if [ -O "$py_bin_dir" ] &&
    [ "$(readlink "$py_bin_dir/python3" 2>/dev/null)" = /usr/bin/python3 ]; then
    PATH=$py_bin_dir:$PATH
    export PATH
  fi
fi
unset py_bin_dir
