#!/usr/bin/env bash
# damage.sh -- damage found at run time, through the mount (issue 22, item
# 4; the library's side is tests/fuzz/damage.c): in every built mode, an
# image whose inode-table block, directory node, extent node or xattr block
# fails its checksum on the device is mounted (mount does not read those
# blocks).  The program that reads the damaged structure gets EIO (never
# garbage, never success), a program that then writes gets EROFS (the
# mount turned read-only), the daemon's log has one line naming the
# block and the structure, the unmount leaves ERRORS in the superblock
# and fsck -n exits 4 (errors left uncorrected).  After a crash the image
# says ERRORS too, and fsck -y repairs it.
. "$(dirname "$0")/fuselib.bash"
fl_need python3
fl_init
# Debian's interpreter when there is one: a version manager's shim in PATH
# (pyenv) costs a second a call on a loaded machine
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

INODES_PER_BLOCK=15   # src/fs/format.h: UBJ_INODES_PER_BLOCK

# populate MNT -- the structures to damage: a file (its inode, in a block
# of the inode table other than the root directory's), a large
# directory (several B+tree nodes), a file of many extents (an extent
# node), a file with an xattr (an xattr block)
populate() {
  local mnt=$1
  mkdir "$mnt/big"
  "$PY" - "$mnt/big" <<'EOF'
import os, sys
for i in range(600):
    with open(os.path.join(sys.argv[1], "name-%04d-%s" % (i, "x" * 40)), "w") as f:
        f.write("%d\n" % i)
EOF
  "$PY" - "$mnt/frag" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(64):                 # every other block: 64 extents
    os.pwrite(fd, b"%c" % (65 + i % 26) * 4096, 2 * i * 4096)
os.close(fd)
EOF
  echo "with an xattr" >"$mnt/xa"
  "$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.tag", b"v" * 100)' "$mnt/xa"
  # plain's inode starts an inode-table block of its own, so damaging
  # that block hides no other structure under test
  "$PY" - "$mnt" "$INODES_PER_BLOCK" <<'EOF'
import os, sys
mnt, ipb = sys.argv[1], int(sys.argv[2])
n = 0
while True:
    p = os.path.join(mnt, "pad-%d" % n)
    open(p, "w").close()
    if os.stat(p).st_ino % ipb == ipb - 1:
        break
    n += 1
with open(os.path.join(mnt, "plain"), "w") as f:
    f.write("plain file\n")
EOF
}

# block_of IMG STRUCT INO -- the block to damage: the inode-table block of
# inode INO, a directory node owned by INO (a leaf), the extent node, the
# xattr block of INO, in the data area (the journal holds old copies);
# ${nvm[@]}: the region option of mode ubj
block_of() {
  local it data layout
  layout=$("$UBJ" inspect "${nvm[@]}" "$1")
  it=$(awk '$1 == "inode" && $2 == "table" { print $3 }' <<<"$layout")
  data=$(awk '$1 == "data" && NF == 3 { print $2 }' <<<"$layout")
  "$PY" - "$1" "$2" "$3" "$it" "$INODES_PER_BLOCK" "$data" <<'EOF'
import struct, sys
img, st, ino, it, ipb, data_start = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
if st == "inode":
    print(it + ino // ipb); sys.exit(0)
magic = {"dir": 0x52494455, "extent": 0x54584555, "xattr": 0x54415855}[st]
with open(img, "rb") as f:
    data = f.read()
for b in range(data_start, len(data) // 4096):   # not the journal's copies
    blk = data[b * 4096:(b + 1) * 4096]
    if struct.unpack_from("<I", blk, 0)[0] != magic:
        continue
    if st == "dir":
        level, = struct.unpack_from("<H", blk, 18)
        owner, = struct.unpack_from("<Q", blk, 24)
        if owner != ino or level != 0:
            continue
    if st == "xattr" and struct.unpack_from("<Q", blk, 16)[0] != ino:
        continue
    print(b); sys.exit(0)
sys.exit("no %s block for inode %d in %s" % (st, ino, img))
EOF
}

# damage IMG BLOCK -- flip a byte of the block's payload: a bad checksum
damage() {
  "$PY" - "$1" "$2" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    off = int(sys.argv[2]) * 4096 + 200
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))
EOF
}

# expect_errno ERRNO WHAT PYTHON-STATEMENT PATH -- the statement on PATH
# must fail with ERRNO (by name)
expect_errno() {
  local want=$1 what=$2 stmt=$3 path=$4 got
  got=$("$PY" - "$path" "$stmt" <<'EOF'
import errno, os, sys
p = sys.argv[1]
try:
    exec(sys.argv[2])
    print("success")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
EOF
)
  [ "$got" = "$want" ] || fl_fail "[$label] $what: expected $want, got $got"
}

# the operation that reads each structure, as a Python statement on p
declare -A READ=(
  [inode]='os.stat(p)'
  [dir]='os.listdir(p)'
  [extent]='open(p, "rb").read()'
  [xattr]='os.getxattr(p, "user.tag")'
)
declare -A PATHOF=([inode]=plain [dir]=big [extent]=frag [xattr]=xa)
declare -A WHAT=([inode]="inode table" [dir]="directory node" [extent]="extent node" [xattr]="xattr block")

for mode in ${UBJ_DAMAGE_MODES:-none ordered journal writeback ubj}; do
  fl_mode_built "$mode" || continue
  base=$T/$mode.img
  fl_mkfs "$base" 64M "$mode"
  fl_mount "$base" "$T/m-$mode" "$mode"
  populate "$T/m-$mode"
  declare -A INO=()
  for st in inode dir extent xattr; do
    INO[$st]=$(stat -c %i "$T/m-$mode/${PATHOF[$st]}")
  done
  fl_umount "$T/m-$mode"
  fl_fsck "$base"
  for st in dir extent xattr; do
    [ $((INO[inode] / INODES_PER_BLOCK)) != $((INO[$st] / INODES_PER_BLOCK)) ] ||
      fl_fail "[$mode] plain (inode ${INO[inode]}) shares an inode-table block with ${PATHOF[$st]} (${INO[$st]})"
  done

  # every structure damaged in one image, one mount: each read gets EIO
  # and its own log line, whichever came first
  label="$mode,all"
  img=$T/$mode-all.img
  cp "$base" "$img"
  if [ "$mode" = ubj ]; then cp "$(fl_nvm "$base")" "$(fl_nvm "$img")"; fi
  nvm=()
  if [ "$mode" = ubj ]; then nvm=(--nvm "$(fl_nvm "$img")"); fi
  declare -A BLK=()
  for st in inode dir extent xattr; do
    BLK[$st]=$(block_of "$img" "$st" "${INO[$st]}")
  done
  for st in inode dir extent xattr; do damage "$img" "${BLK[$st]}"; done
  mnt=$T/m-$mode-all
  fl_mount "$img" "$mnt" "$mode" -o attr_timeout=0,entry_timeout=0
  for st in inode dir extent xattr; do
    label="$mode,$st"
    p=$mnt/${PATHOF[$st]}
    expect_errno EIO "${READ[$st]} of the damaged $st" "${READ[$st]}" "$p"
    expect_errno EIO "${READ[$st]} again" "${READ[$st]}" "$p"
    expect_errno EROFS "a create after the error" 'open(p, "w")' "$mnt/new"
  done
  label="$mode,all"
  log=$T/daemon.$(basename "$mnt").log
  for st in inode dir extent xattr; do
    grep -q "block ${BLK[$st]}: bad checksum (${WHAT[$st]})" "$log" ||
      fl_fail "[$mode,$st] the daemon's log does not name block ${BLK[$st]}: $(cat "$log")"
  done
  fl_umount "$mnt"
  rc=0
  out=$("$UBJ" fsck -n "${nvm[@]}" "$img" 2>&1) || rc=$?
  [ "$rc" = 4 ] || fl_fail "[$label] fsck -n after the errors exited $rc, expected 4: $out"
  state=$("$UBJ" inspect "${nvm[@]}" "$img" 2>&1 | grep '^  state:' || true)
  [[ "$state" == *errors* ]] || fl_fail "[$label] the superblock does not say ERRORS: $state"
  rm -f "$img" "$(fl_nvm "$img")"

  # the same damage, then a crash: ERRORS was recorded when the error was
  # found (the home superblock at once, the next commit -- made within
  # 100 ms here, then checkpointed -- into the log or region), so the
  # image says so after kill -9; fsck -y repairs it (exit 1) and the
  # repaired image is clean and mounts read-write
  label="$mode,crash"
  img=$T/$mode-crash.img
  cp "$base" "$img"
  if [ "$mode" = ubj ]; then cp "$(fl_nvm "$base")" "$(fl_nvm "$img")"; fi
  nvm=()
  if [ "$mode" = ubj ]; then nvm=(--nvm "$(fl_nvm "$img")"); fi
  blk=$(block_of "$img" inode "${INO[inode]}")
  damage "$img" "$blk"
  mnt=$T/m-$mode-crash
  fl_mount "$img" "$mnt" "$mode" -i 100 -o attr_timeout=0,entry_timeout=0
  expect_errno EIO "os.stat(p) of the damaged inode" 'os.stat(p)' "$mnt/plain"
  expect_errno EROFS "a create after the error" 'open(p, "w")' "$mnt/new"
  sleep 0.5
  fl_kill9 "$mnt"
  state=$("$UBJ" inspect "${nvm[@]}" "$img" 2>&1 | grep '^  state:' || true)
  [[ "$state" == *errors* ]] || fl_fail "[$label] after kill -9 the superblock does not say ERRORS: $state"
  if [ "$mode" = ubj ]; then   # fsck repairs the image alone: the pair first
    fl_mount "$img" "$mnt" "$mode"
    fl_umount "$mnt"
  fi
  rc=0
  out=$("$UBJ" fsck -y "$img" 2>&1) || rc=$?
  [ "$rc" = 1 ] || fl_fail "[$label] fsck -y exited $rc, expected 1 (repaired): $out"
  fl_fsck "$img"
  fl_mount "$img" "$mnt" "$mode"
  echo after >"$mnt/new" || fl_fail "[$label] the repaired image does not take a write"
  fl_umount "$mnt"
  fl_fsck "$img"
  rm -f "$img" "$(fl_nvm "$img")" "$base"
done
echo "damage through the mount: EIO, then EROFS, the block in the log, ERRORS recorded"
