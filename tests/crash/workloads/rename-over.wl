# A rename over an existing name is atomic (old or new, never neither,
# never both), and an fsync of the directory makes it durable.
mkdir /d
creat /d/target
write /d/target 0 8192
begin
creat /d/tmp
write /d/tmp 0 12288
fsync /d/tmp
rename /d/tmp /d/target
fsync /d
