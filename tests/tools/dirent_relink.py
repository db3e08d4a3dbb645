#!/usr/bin/env python3
# tests/tools/dirent_relink.py IMAGE NAME INO -- point the one directory
# entry called NAME (a directory, DT_DIR) of a ubjfs image at inode INO and
# reseal its leaf block's crc32c (docs/FORMAT.md sections 3 and 9): a
# corruption no checksum catches, e.g. an entry naming one of its
# ancestors (a directory loop).  Exit 0 when exactly one entry changed.
import struct
import sys


def crc32c(crc, data, table=[]):
    """The raw CRC-32C register update (ISA-L crc32_iscsi, no inversion)."""
    if not table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    for b in data:
        crc = table[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc


def main():
    img, name, ino = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    pat = bytes([4, len(name)]) + name          # type DT_DIR, namelen, name
    hits = 0
    with open(img, 'r+b') as f:
        data = f.read()
        seed = crc32c(0xffffffff, data[40:56])  # the superblock's uuid
        for blk in range(len(data) // 4096):
            b = bytearray(data[blk * 4096:(blk + 1) * 4096])
            nrec, level = struct.unpack_from('<HH', b, 16)
            if b[0:4] != b'UDIR' or level != 0:
                continue
            off = 32
            for _ in range(nrec):
                nl = b[off + 17]
                if bytes(b[off + 16:off + 18 + nl]) == pat:
                    crc = bytes(b[4:8])
                    b[4:8] = bytes(4)
                    if struct.pack('<I', crc32c(seed, bytes(b))) != crc:
                        sys.exit('%s: block %d: checksum does not match' % (img, blk))
                    struct.pack_into('<Q', b, off + 8, ino)
                    b[4:8] = struct.pack('<I', crc32c(seed, bytes(b)))
                    f.seek(blk * 4096)
                    f.write(b)
                    hits += 1
                off += (18 + nl + 7) // 8 * 8
    sys.exit(0 if hits == 1 else '%s: %d entries named %s' % (img, hits, name))


main()
