#!/usr/bin/env bash
# sqlite.sh -- sqlite3 with journal_mode DELETE and WAL, synchronous FULL:
# tables, indexes, thousands of rows in transactions, updates and deletes,
# PRAGMA integrity_check; then unmount, fsck, remount, check again.  In
# each mode of fl_modes.
. "$(dirname "$0")/fuselib.bash"
fl_need sqlite3
fl_init

# sql_load JOURNAL -- the workload as SQL text
sql_load() {
  echo "PRAGMA journal_mode=$1; PRAGMA synchronous=FULL;"
  echo "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);"
  echo "CREATE INDEX tk ON t(k);"
  local b
  for b in $(seq 0 19); do
    echo "BEGIN;"
    echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<250)"
    echo "INSERT INTO t(k, v) SELECT printf('key-%d-%d', $b, x), randomblob(300) FROM c;"
    echo "COMMIT;"
  done
  echo "UPDATE t SET v = randomblob(500) WHERE id % 7 = 0;"
  echo "DELETE FROM t WHERE id % 5 = 0;"
  echo "PRAGMA integrity_check;"
  echo "SELECT count(*) FROM t;"
}

for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  fl_mkfs "$img" 256M "$mode"
  fl_mount "$img" "$mnt" "$mode"
  for j in DELETE WAL; do
    out=$(sql_load $j | sqlite3 "$mnt/$j.db" 2>&1) || fl_fail "[$mode $j] sqlite3: $out"
    want=$(printf '%s\nok\n4000' "$(echo $j | tr A-Z a-z)")
    [ "$out" = "$want" ] || fl_fail "[$mode $j] unexpected output: $out"
  done
  fl_umount "$mnt"
  fl_fsck "$img"
  fl_mount "$img" "$mnt" "$mode"
  for j in DELETE WAL; do
    out=$(sqlite3 "$mnt/$j.db" "PRAGMA integrity_check; SELECT count(*) FROM t;" 2>&1)
    [ "$out" = "$(printf 'ok\n4000')" ] || fl_fail "[$mode $j] after a remount: $out"
  done
  fl_umount "$mnt"
  rm -f "$img"
  echo "sqlite.sh: $mode ok"
done
