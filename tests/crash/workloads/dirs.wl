# Directory operations with parent and sibling dependencies.
mkdir /a
mkdir /b
creat /a/x
begin
mkdir /a/sub
creat /a/sub/y
write /a/sub/y 0 4K
rename /a/sub /b/sub
fsync /b
rmdir /a/sub
rename /a/x /b/sub/x
rmdir /a
fsync /
symlink /b/sub/y /ylink
link /b/sub/y /yhard
sync
