# tests/common/python.bash -- which python3 the test scripts run, sourced
# by tests/common/lib.sh and tests/fuse/fuselib.bash (not a test itself).
# The scripts need only the standard library, so they prefer the
# distribution's interpreter (/usr/bin/python3) over the first python3 on
# PATH: a version manager's shim there (pyenv) costs 0.25 s a call idle
# and about 1 s under load, dozens of calls a CI pass.  `python3` below is
# a function, so `command -v python3` and every `python3 ...` line of a
# test script use it; without /usr/bin/python3 it is the PATH one.
if [ -x /usr/bin/python3 ]; then
  python3() { /usr/bin/python3 "$@"; }
fi
