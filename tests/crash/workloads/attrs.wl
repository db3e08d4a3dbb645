# xattrs, fallocate (unwritten extents, keep-size) and truncate.
creat /f
write /f 0 8K
setxattr /f user.old 48
begin
setxattr /f user.new 512
removexattr /f user.old
fsync /f
fallocate /f 8192 16K
fallocate /f 24576 8K keep
write /f 12288 4K
fdatasync /f
truncate /f 5008
truncate /f 40960
fsync /f
