#!/usr/bin/env bash
# model.sh -- `ubjfs mount --device SPEC`: the image under a timed device
# model on the real clock (docs/DEVICES.md).
#   nand:slc, in each mode of fl_modes (ubj with --nvm-profile pcm): cp -r
#     of a generated tree (about 2 MiB in 120 files) onto the mount, diff -r
#     against the source, SIGUSR1 writes a statistics report, unmount, fsck,
#     then the final report must show the writes (bytes_written >= the
#     tree's bytes, flash_programs >= its 4 KiB units) and, for ubj, the NVM
#     model's lines; remount with the model and diff -r again (the reads go
#     through the model: bytes_read >= the tree's bytes).
#   hdd:hp_c2249a, mode none, image on tmpfs when there is one: 50 writes
#     of 4 KiB with O_DSYNC (a FUSE fsync each) must take >= 100 ms of wall
#     time -- each costs the disk at least a write command and a flush
#     (>= 2.8 ms by the profile), while the same run without the model on
#     tmpfs takes a few ms (printed, not asserted); the report must count
#     >= 50 writes and >= 50 flushes.
#   --stats without --device (before: a usage error): the image device's
#     own counters and the file system's (bytes_written >= the tree's
#     bytes, cache_misses and commits counted), on SIGUSR1 and at unmount.
#   Usage errors: a spec with a leaf, an unknown profile, a bad
#     --nvm-profile: exit 2, nothing mounted.
. "$(dirname "$0")/fuselib.bash"
fl_need diff cp dd
fl_init

# st_get FILE NAME -- a value of a statistics report
st_get() {
  awk -v k="$2" '$1 == k { print $2; found = 1 } END { if (!found) print "missing" }' "$1"
}

# st_ge FILE NAME MIN LABEL -- the value of NAME must be >= MIN
st_ge() {
  local v
  v=$(st_get "$1" "$2")
  [ "$v" != missing ] || fl_fail "[$4] no $2 in the report: $(cat "$1")"
  awk -v v="$v" -v m="$3" 'BEGIN { exit !(v + 0 >= m + 0) }' ||
    fl_fail "[$4] $2 = $v, want >= $3; report: $(tr '\n' ' ' <"$1")"
}

# make_tree DIR -- 120 files of 1..40 KiB (plus a 600 KiB one) in 4 dirs
make_tree() {
  local d i
  for d in a b c d; do
    mkdir -p "$1/$d"
    for ((i = 0; i < 30; i++)); do
      head -c $(((i * 7919 + ${#d} * 131) % 40960 + 1024)) /dev/urandom >"$1/$d/f$i"
    done
  done
  head -c 614400 /dev/urandom >"$1/a/big"
}

src=$T/src
make_tree "$src"
tree_bytes=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
tree_units=$(find "$src" -type f -printf '%s\n' | awk '{ s += int(($1 + 4095) / 4096) } END { print s }')

# ---- usage errors --------------------------------------------------------
"$UBJ" mkfs -q -s 16M "$T/u.img"
mkdir -p "$T/u"
for bad in "--device nand:slc@ram" "--device nand:slc@file:/x" "--device nand:nosuch" \
           "--device disk:slc" "--device nand:slc --nvm-profile nosuch"; do
  rc=0
  # shellcheck disable=SC2086  # the options split on purpose
  "$UBJ" mount $bad "$T/u.img" "$T/u" >"$T/err" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fl_fail "mount $bad exited $rc, want 2: $(cat "$T/err")"
  mountpoint -q "$T/u" && fl_fail "mount $bad mounted"
done
rm -f "$T/u.img"

# usr1_report MNT FILE LABEL -- SIGUSR1 to MNT's daemon: FILE must hold
# its report within 10 s
usr1_report() {
  local i
  kill -USR1 "${FL_PID[$1]}"
  for ((i = 0; i < 100; i++)); do
    [ -s "$2" ] && break
    sleep 0.1
  done
  grep -q '(SIGUSR1)' "$2" || fl_fail "[$3] no report after SIGUSR1"
}

# ---- --stats without a model: the image's requests and the file system's
mode=$(fl_modes | awk '{ print $1 }')
img=$T/plain.img
mnt=$T/mnt-plain
st=$T/stats-plain
fl_mkfs "$img" 64M "$mode"
fl_mount "$img" "$mnt" "$mode" --stats "$st"
cp -r "$src" "$mnt/tree"
sync -f "$mnt/tree/a/big"
usr1_report "$mnt" "$st" "--stats, no model"
st_ge "$st" commits 1 "--stats, no model, SIGUSR1"
fl_umount "$mnt"
grep -q '(unmount)' "$st" || fl_fail "[--stats, no model] no report after the unmount: $(cat "$st")"
[ "$(st_get "$st" device)" = image ] || fl_fail "[--stats, no model] device $(st_get "$st" device)"
st_ge "$st" bytes_written "$tree_bytes" "--stats, no model"
st_ge "$st" flushes 1 "--stats, no model"
st_ge "$st" cache_misses 1 "--stats, no model"
st_ge "$st" commits 1 "--stats, no model"
rm -f "$img"

# ---- nand:slc, each mode: a tree copied through the model --------------------
for mode in $(fl_modes); do
  img=$T/$mode.img
  mnt=$T/mnt-$mode
  st=$T/stats-$mode
  extra=()
  if [ "$mode" = ubj ]; then extra+=(--nvm-profile pcm); fi
  fl_mkfs "$img" 64M "$mode"
  fl_mount "$img" "$mnt" "$mode" --device nand:slc --stats "$st" "${extra[@]}"
  cp -r "$src" "$mnt/tree"
  sync -f "$mnt/tree/a/big"
  diff -r "$src" "$mnt/tree" >"$T/diff" || fl_fail "[$mode] copied tree differs: $(head -5 "$T/diff")"
  usr1_report "$mnt" "$st" "$mode"
  st_ge "$st" reads 1 "$mode SIGUSR1"
  fl_umount "$mnt"
  fl_fsck "$img"
  grep -q '(unmount)' "$st" || fl_fail "[$mode] no report after the unmount: $(cat "$st")"
  [ "$(st_get "$st" device)" = nand:slc ] || fl_fail "[$mode] report names the device as $(st_get "$st" device)"
  [ "$(st_get "$st" clock)" = real ] || fl_fail "[$mode] clock $(st_get "$st" clock), want real"
  st_ge "$st" bytes_written "$tree_bytes" "$mode"
  st_ge "$st" flash_programs "$tree_units" "$mode"
  st_ge "$st" busy_s 0.000001 "$mode"
  st_ge "$st" energy_j 0.000001 "$mode"
  if [ "$mode" = ubj ]; then
    st_ge "$st" nvm_model_s 0.000001 "$mode"
    st_ge "$st" nvm_model_energy_j 0.000000001 "$mode"
  fi
  cp "$st" "$T/first-$mode"
  fl_mount "$img" "$mnt" "$mode" --device nand:slc --stats "$st"
  diff -r "$src" "$mnt/tree" >"$T/diff" || fl_fail "[$mode] tree differs after a remount: $(head -5 "$T/diff")"
  fl_umount "$mnt"
  st_ge "$st" bytes_read "$tree_bytes" "$mode remount"
  fl_fsck "$img"
  rm -f "$img"
  echo "model.sh: nand:slc $mode ok ($(st_get "$T/first-$mode" bytes_written) bytes written," \
       "$(st_get "$T/first-$mode" flash_programs) programs, $(st_get "$T/first-$mode" energy_j) J)"
done

# ---- hdd:hp_c2249a: fsync'd writes take the disk's time ------------------------
hdir=$FL_NVMDIR            # tmpfs when there is one: the host's own fsync is cheap
img=$hdir/hdd.img
mnt=$T/mnt-hdd
st=$T/stats-hdd
# dsync_ms MNT -- wall ms of 50 O_DSYNC 4 KiB writes (one process)
dsync_ms() {
  local t0 t1
  t0=$(date +%s%N)
  dd if=/dev/zero of="$1/sync" bs=4k count=50 oflag=dsync status=none
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
fl_mkfs "$img" 32M none
fl_mount "$img" "$mnt" none
plain=$(dsync_ms "$mnt")
fl_umount "$mnt"
fl_mount "$img" "$mnt" none --device hdd:hp_c2249a --stats "$st"
modeled=$(dsync_ms "$mnt")
cmp -n 204800 "$mnt/sync" /dev/zero || fl_fail "[hdd] written data differs"
fl_umount "$mnt"
fl_fsck "$img"
[ "$modeled" -ge 100 ] ||
  fl_fail "[hdd] 50 dsync writes took $modeled ms on hdd:hp_c2249a, want >= 100 (no model: $plain ms)"
st_ge "$st" writes 50 hdd
st_ge "$st" flushes 50 hdd
st_ge "$st" bytes_written 204800 hdd
st_ge "$st" seeks 1 hdd
rm -f "$img"
echo "model.sh: hdd:hp_c2249a ok (50 dsync writes: $modeled ms with the model, $plain ms without;" \
     "response mean $(st_get "$st" response_mean_us) us)"
