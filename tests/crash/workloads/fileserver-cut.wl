# Filebench fileserver cut short: whole-file writes, appends, stat-like
# renames and deletes in a directory tree, with a final sync.
mkdir /srv
mkdir /srv/x
creat /srv/x/f1
write /srv/x/f1 0 32K
begin
creat /srv/x/f2
write /srv/x/f2 0 48K
append /srv/x/f1 16K
creat /srv/f3
write /srv/f3 0 20K
unlink /srv/x/f1
rename /srv/f3 /srv/x/f1
truncate /srv/x/f2 8K
sync
