# The timer's work driven by `tick` (ubj_tick): commits without a waiter
# and, after enough ticks, the checkpoint that releases the mount lock
# around the device I/O (mode ubj) or the log checkpoint (journal modes).
creat /f
write /f 0 8K
begin
write /f 0 4K
tick
creat /g
write /g 0 12K
tick
tick
write /f 4096 4096
tick
tick
tick
tick
unlink /g
tick
fsync /f
