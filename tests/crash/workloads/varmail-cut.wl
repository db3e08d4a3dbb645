# The varmail workload cut short: create, append, fsync, delete in a
# mail spool (Filebench varmail's loop, a few iterations).
mkdir /spool
creat /spool/m0
write /spool/m0 0 8K
begin
unlink /spool/m0
creat /spool/m1
append /spool/m1 4K
fsync /spool/m1
creat /spool/m2
append /spool/m2 12K
fsync /spool/m2
append /spool/m1 2K
fsync /spool/m1
unlink /spool/m1
creat /spool/m3
append /spool/m3 6K
fsync /spool/m3
