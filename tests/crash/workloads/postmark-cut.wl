# Postmark cut short: a pool of small files, then transactions that
# create, delete, read-append and fsync (no waits, three subdirectories).
mkdir /s0
mkdir /s1
mkdir /s2
creat /s0/a
write /s0/a 0 3K
creat /s1/b
write /s1/b 0 9K
creat /s2/c
write /s2/c 0 1K
begin
creat /s1/d
write /s1/d 0 5K
unlink /s0/a
append /s2/c 2K
creat /s0/e
write /s0/e 0 7K
fsync /s0/e
unlink /s1/b
append /s1/d 1K
fsync /s1/d
rename /s2/c /s0/c
fsync /s0
