# ubjfs crashtest reproducer (minimized from g6)
# mode sync, seed 1, broken variant --break sync-no-rename
# crash point: flush epoch 3 of 5 (writes 4..5): every write but 1
# failure: integrity: fsck finds more than leaks on the crash state: corruption (1 problems, 0 leaks; first: directory 2: records 1 names, 1 nodes, 1 blocks, size 4096; found 2, 1, 1, 4096)
# replay: ubjfs crashtest --mode sync --seed 1 --break sync-no-rename --atomic-block --workload THIS_FILE
mkdir /A
mkdir /B
creat /foo
write /foo 0 8192
creat /A/foo
write /A/foo 0 4096
setxattr /A/foo user.x 32
begin
creat /A/bar
