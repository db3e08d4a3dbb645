#!/usr/bin/env python3
# tests/tools/sparse_cmp.py A B -- do host files A and B hold the same
# bytes?  Like cmp, but a sparse file's holes are not read: the sizes must
# match, and the bytes must match over the union of both files' data runs
# (SEEK_DATA/SEEK_HOLE); outside it both read as zeros.  Exit 0 same,
# 1 different (what differs on stderr).
import os
import sys


def runs(fd, size):
    """The data runs [start, end) of fd."""
    out, off = [], 0
    while off < size:
        try:
            d = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append((d, h))
        off = h
    return out


def main():
    fa, fb = (os.open(p, os.O_RDONLY) for p in sys.argv[1:3])
    sa, sb = os.fstat(fa).st_size, os.fstat(fb).st_size
    if sa != sb:
        sys.exit('sizes differ: %d and %d' % (sa, sb))
    for d, h in sorted(runs(fa, sa) + runs(fb, sb)):
        off = d
        while off < h:
            n = min(h - off, 1 << 20)
            if os.pread(fa, n, off) != os.pread(fb, n, off):
                sys.exit('bytes differ in [%d, %d)' % (off, off + n))
            off += n


main()
