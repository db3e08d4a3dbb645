#!/usr/bin/env bash
# crash.sh -- crash through FUSE: kill -9 the daemon while sqlite3 commits
# transactions (WAL with synchronous FULL; rollback journal with EXTRA,
# see sql_writer) and while an
# appender writes records, each followed by fsync, logging on the host
# what was acknowledged.  Then: (mode ubj) fsck of the image + NVM region
# pair is clean; the remount recovers; PRAGMA integrity_check is ok; every
# acknowledged transaction is there whole and no transaction is there in
# part (one exception, proven from a trace of sqlite3's system calls
# before it is allowed: check_sql); every acknowledged record is there,
# intact and in order; after a
# clean unmount fsck is clean.  Run for each built mode that promises
# crash consistency (ubj, ordered, journal, sync: the remount of sync's
# unclean image reclaims its leaks first); skipped while none is built:
# mode none gives no guarantee after a crash.
. "$(dirname "$0")/fuselib.bash"
fl_need sqlite3 dd strace
fl_init
modes=$(fl_crash_modes)
[ -n "$modes" ] || fl_skip "no crash-consistent mode (ubj, ordered, journal) is built yet"
ROWS=20                                   # rows per transaction
RECSZ=128                                 # bytes per appended record

# sql_writer JOURNAL ACKFILE -- endless committed transactions on stdin of
# sqlite3; "ack N" is printed once transaction N has committed
sql_writer() {
  echo "PRAGMA journal_mode=$1;"
  # WAL: FULL syncs the log at every commit.  DELETE: a commit is the
  # journal's unlink, which FULL does not sync (SQLite's documented gap:
  # the last transaction may roll back after a crash); EXTRA syncs the
  # directory after it, so every acknowledged commit must survive.
  if [ "$1" = WAL ]; then echo "PRAGMA synchronous=FULL;"; else echo "PRAGMA synchronous=EXTRA;"; fi
  echo "CREATE TABLE IF NOT EXISTS t(batch INTEGER, i INTEGER, v BLOB);"
  local b
  for ((b = 1; b <= 100000; b++)); do
    echo "BEGIN;"
    echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<$ROWS)"
    echo "INSERT INTO t SELECT $b, x, randomblob(200) FROM c;"
    echo "COMMIT;"
    echo "SELECT 'ack', $b;"
  done
}

# record N -- the RECSZ bytes of appended record N
record() {
  printf "%-*s\n" $((RECSZ - 1)) "record $1 $(printf '%0100d' "$1")"
}

# appender FILE ACKFILE -- append + fsync records; log each acknowledged
appender() {
  local n
  for ((n = 1; n <= 1000000; n++)); do
    record "$n" | dd of="$1" bs=$RECSZ count=1 oflag=append conv=notrunc,fsync \
      status=none 2>/dev/null || return 0
    echo "$n" >>"$2"
  done
}

# check_sql DB ACKFILE JOURNAL TRACE -- integrity, and whole acknowledged
# transactions.  One exception, and only when the trace proves it: in
# rollback-journal mode sqlite3 acknowledges a commit whose directory sync
# it could not start because the daemon had died (fl_sqlite_dirsync_gap);
# that one transaction, the last acknowledged, may roll back.
check_sql() {
  local db=$1 j=$3 last out hot=no missing
  last=$(grep -c '^ack|' "$2" || true)
  [ -e "$db-journal" ] && hot=yes
  out=$(sqlite3 "$db" "PRAGMA integrity_check;" 2>&1)
  [ "$out" = ok ] || fl_fail "[$mode $j] integrity_check after the crash: $out"
  missing=$(sqlite3 "$db" "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<$last)
    SELECT group_concat(x, ' ') FROM c WHERE x NOT IN (SELECT batch FROM t);")
  if [ -n "$missing" ]; then
    if [ "$j" = DELETE ] && [ "$missing" = "$last" ] && [ "$hot" = yes ] &&
      fl_sqlite_dirsync_gap "$4" "$(dirname "$db")"; then
      echo "  [$mode $j] sqlite: transaction $last was acknowledged without its directory sync" \
        "(the daemon died first; sqlite ignores a directory it cannot open) and rolled back"
      last=$((last - 1))
    else
      fl_fail "[$mode $j] $last transactions acknowledged; missing: $missing" \
        "(hot journal at remount: $hot; the last lines sqlite3 ran:" \
        "$(tail -n 4 "$4" | tr '\n' ' '))"
    fi
  fi
  out=$(sqlite3 "$db" "SELECT count(*) FROM t WHERE batch <= $last;")
  [ "$out" = $((last * ROWS)) ] ||
    fl_fail "[$mode $j] $last transactions acknowledged, $out of their $((last * ROWS)) rows found"
  out=$(sqlite3 "$db" "SELECT count(*) FROM (SELECT batch FROM t GROUP BY batch HAVING count(*) != $ROWS);")
  [ "$out" = 0 ] || fl_fail "[$mode $j] $out transactions are there in part"
  echo "  [$mode $j] sqlite: $last transactions acknowledged, all there"
}

# check_log FILE ACKFILE -- every acknowledged record, intact, in order
check_log() {
  local last n
  last=$(tail -n 1 "$2" 2>/dev/null || echo 0)
  last=${last:-0}
  for ((n = 1; n <= last; n++)); do record "$n"; done >"$T/want"
  head -c "$((last * RECSZ))" "$1" | cmp -s - "$T/want" ||
    fl_fail "[$mode] the first $last acknowledged records are not intact"
  echo "  [$mode] appender: $last records acknowledged, all there"
}

# crash_run JOURNAL -- one crash with sqlite in JOURNAL mode and the appender
crash_run() {
  local j=$1 img=$T/$mode.img mnt
  mnt=$(realpath -m "$T/mnt-$mode")          # as sqlite3 names its directory
  fl_mkfs "$img" 256M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  : >"$T/sql.ack"
  : >"$T/log.ack"
  # traced (opens and unlinks only) for check_sql's one exception
  sql_writer "$j" | strace -f -qq --seccomp-bpf -e trace=unlink,openat -o "$T/sql.trace" \
    sqlite3 -bail "$mnt/db" >"$T/sql.ack" 2>"$T/sql.err" &
  local sp=$!
  appender "$mnt/log" "$T/log.ack" &
  local ap=$!
  sleep "$((2 + RANDOM % 3))"
  fl_kill9 "$mnt" "$sp" "$ap"
  wait "$sp" 2>/dev/null || true
  wait "$ap" 2>/dev/null || true
  if [ "$mode" = ubj ]; then
    local out rc=0
    out=$("$UBJ" fsck -n --nvm "$(fl_nvm "$img")" "$img" 2>&1) || rc=$?
    [ "$rc" = 0 ] || fl_fail "[$mode] fsck of the crashed pair exited $rc: $out"
    # the image alone is not known to be clean: its committed blocks may
    # be only in the region (before, this said "clean" and exited 0)
    rc=0
    out=$("$UBJ" fsck -n "$img" 2>&1) || rc=$?
    [ "$rc" = 4 ] && [[ "$out" == *"not known to be clean"* ]] ||
      fl_fail "[$mode] fsck -n of the crashed image alone exited $rc: $out"
  fi
  fl_mount "$img" "$mnt" "$mode"
  check_sql "$mnt/db" "$T/sql.ack" "$j" "$T/sql.trace"
  check_log "$mnt/log" "$T/log.ack"
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img" "$(fl_nvm "$img")"
}

for mode in $modes; do
  for j in DELETE WAL; do
    crash_run "$j"
  done
  echo "crash.sh: $mode ok"
done
