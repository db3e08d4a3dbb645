# Unlinked while open: after any crash, recovery frees the inode and its
# blocks (the oracle compares free blocks and inodes).
creat /big
write /big 0 64K
begin
open /big
unlink /big
fsync /
creat /new
write /new 0 4K
fsync /new
close /big
