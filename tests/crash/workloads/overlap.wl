# Two operations at once (issue 20): a create parked inside its handle
# (after its first change, the mount lock released) while an fsync of its
# directory commits; the fsync waits for the create to stop (the commit
# barrier), so the create is whole and durable when it returns.  Test
# builds only (a plain build's overlap fails with EOPNOTSUPP, as in the
# reference).  `--break handle-no-wait` commits half of it: caught.
mkdir /d
creat /d/old
write /d/old 0 4096
begin
overlap /d/new
write /d/new 0 8192
creat /d/after
