# A longer run: enough dirty blocks for commits at handle boundaries and
# checkpoints (mode ubj) or log reuse (journal modes) in the middle.
mkdir /d
begin
creat /d/a
write /d/a 0 32K
creat /d/b
write /d/b 0 32K
creat /d/c
write /d/c 0 32K
fsync /d/c
write /d/a 4K 8K
rename /d/b /d/c
creat /d/e
write /d/e 0 48K
fsync /d
unlink /d/a
truncate /d/e 4K
write /d/c 0 16K
fsync /d/c
sync
