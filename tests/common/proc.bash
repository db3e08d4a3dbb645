# tests/common/proc.bash -- process state for test scripts, sourced by
# tests/common/lib.sh and tests/fuse/fuselib.bash (not a test itself).
#   pid_alive PID   true while PID runs: false once it has exited, even
#                   while it is still a zombie
# A daemon that `ubjfs mount` started belongs to PID 1 once the tool
# returns, and an init that reaps slowly (this workplace's firecracker
# init: 1-20 s) leaves it a zombie long after it exited; `kill -0`
# succeeds on a zombie, so waiting on it waited for the reaper, not for
# the daemon (1.3-1.8 s of every unmount in the FUSE tests).
pid_alive() {
  local st
  kill -0 "$1" 2>/dev/null || return 1
  st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$st" != Z ] && [ "$st" != X ]
}
