# Overwrites of committed blocks: in mode ubj a frozen buffer is copied on
# write; every fsync'd version must survive, no older or newer one.
creat /f
write /f 0 16K
begin
write /f 0 4K
fsync /f
write /f 0 4K
write /f 8192 4096
fsync /f
write /f 1040 3008
fdatasync /f
append /f 4K
sync
