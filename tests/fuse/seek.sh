#!/usr/bin/env bash
# seek.sh -- lseek(2) SEEK_DATA / SEEK_HOLE through the mount (issue 14,
# defect 6): the frontend's lseek handler answers from the extent map
# (ubj_seek_data / ubj_seek_hole), so holes at the start, in the middle
# and at the end are found, fallocated (unwritten) ranges are holes until
# written, and ENXIO comes at and past EOF; a 4 TiB file with one block at
# its end is found at once.  With -o writeback_cache the kernel may hold
# dirty pages it does not write back before it asks, so there the answer
# must never skip them: the kernel's own (all data up to the size).
#
# Fails on fd8c42e: no lseek handler, so the kernel's fallback said the
# whole file is data: SEEK_DATA(0) of a file with a 10 MiB hole at its
# start returned 0, SEEK_HOLE(0) the size.
. "$(dirname "$0")/fuselib.bash"
fl_need python3
fl_init
img=$T/disk.img
mnt=$T/mnt
"$UBJ" mkfs -q -s 64M "$img"

check() {
  python3 - "$1" <<'PY' || fl_fail "[$2] $(cat "$T/py.err" 2>/dev/null)"
import errno, os, sys
d = sys.argv[1]
M = 1 << 20
def expect(what, got, want):
    if got != want:
        sys.exit('%s: got %r, want %r' % (what, got, want))
def enxio(fd, off, whence, what):
    try:
        r = os.lseek(fd, off, whence)
    except OSError as e:
        expect(what, e.errno, errno.ENXIO)
        return
    sys.exit('%s: got %d, want ENXIO' % (what, r))
D, H = os.SEEK_DATA, os.SEEK_HOLE
p = os.path.join(d, 'sparse')
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
size = 100 * M + 5
os.ftruncate(fd, size)
os.pwrite(fd, b'x' * 4096, 10 * M)              # data in the middle
os.pwrite(fd, b'end', size - 3)                  # and in the last block
expect('SEEK_DATA 0 (hole at the start)', os.lseek(fd, 0, D), 10 * M)
expect('SEEK_HOLE 0', os.lseek(fd, 0, H), 0)
expect('SEEK_DATA inside data', os.lseek(fd, 10 * M + 7, D), 10 * M + 7)
expect('SEEK_HOLE after the data', os.lseek(fd, 10 * M, H), 10 * M + 4096)
last = (size - 1) // 4096 * 4096
expect('SEEK_DATA of the middle hole', os.lseek(fd, 10 * M + 4096, D), last)
expect('SEEK_HOLE in the last block: the size', os.lseek(fd, last, H), size)
enxio(fd, size, D, 'SEEK_DATA at EOF')
enxio(fd, size, H, 'SEEK_HOLE at EOF')
enxio(fd, size + M, D, 'SEEK_DATA past EOF')
# fallocated blocks are holes until written
os.posix_fallocate(fd, 20 * M, 8 * M)
expect('SEEK_DATA over an fallocated range', os.lseek(fd, 11 * M, D), last)
os.pwrite(fd, b'y' * 4096, 24 * M)
expect('SEEK_DATA finds the written block', os.lseek(fd, 11 * M, D), 24 * M)
expect('SEEK_HOLE after it', os.lseek(fd, 24 * M, H), 24 * M + 4096)
with open(p, 'rb') as f:                          # the bytes are as written
    f.seek(10 * M); expect('data', f.read(4096), b'x' * 4096)
    f.seek(20 * M); expect('fallocated zeros', f.read(4 * M), bytes(4 * M))
os.close(fd)
# a 4 TiB file with one block at its end
p = os.path.join(d, 'huge')
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
T = 4 << 40
os.ftruncate(fd, T)
os.pwrite(fd, b'z', T - 1)
expect('4 TiB: SEEK_DATA 0', os.lseek(fd, 0, D), T - 4096)
expect('4 TiB: SEEK_HOLE', os.lseek(fd, T - 4096, H), T)
os.close(fd)
os.unlink(p)
PY
}

fl_mount "$img" "$mnt" none
check "$mnt" default 2>"$T/py.err"
fl_umount "$mnt"

# writeback_cache: data written a moment ago (still in the page cache) is
# never reported as a hole
fl_mount "$img" "$mnt" none -o writeback_cache
python3 - "$mnt/wb" 2>"$T/py.err" <<'PY' || fl_fail "[writeback_cache] $(cat "$T/py.err")"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
M = 1 << 20
os.ftruncate(fd, 100 * M)
os.pwrite(fd, b'x' * 4096, 10 * M)
d, h = os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 10 * M, os.SEEK_HOLE)
if d > 10 * M or h < 10 * M + 4096:
    sys.exit('dirty data called a hole: SEEK_DATA(0) = %d, SEEK_HOLE(10M) = %d' % (d, h))
os.close(fd)
PY
fl_umount "$mnt"
fl_fsck "$img"
echo "fuse seek: all checks passed"
