#!/usr/bin/env bash
# tests/tools/usability.sh -- what a new user runs into, each once:
#  - ls, cat, stat, cp and inspect take --nvm PATH for a mode-ubj image
#    (and say "pass --nvm" in words, not the library's field name, when
#    it is missing); an empty --nvm is a usage error;
#  - fsck of a mode-ubj image that crashed, checked without --nvm, says
#    that its NVM region was not read; fsck --nvm of something that is not
#    a region gives a reason;
#  - fsck -y of a crashed image leaves the superblock state CLEAN;
#  - cp FILE IMAGE:/nodir/ is refused like GNU cp (no file "nodir"); a
#    directory given as IMAGE is called a directory;
#  - mount -o bogus says so in one line.
# A crash is a `ubjfs cp` killed (SIGKILL) while it copies a large file.
# Run by CTest with bash; UBJ_TOOL = the ubjfs binary.  Exit 0 pass, 77 skip.
. "$(dirname "$0")/../common/lib.sh" usability
U=$UBJ_TOOL
# one_line PATTERN -- stderr is one line matching PATTERN (grep -E)
one_line() {
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "want one error line, got: $(cat "$tmp/err")"
  grep -qE "$1" "$tmp/err" || fail "error line lacks '$1': $(cat "$tmp/err")"
}
# sb_state IMG -- the superblock's state word (1 clean, 2 mounted)
sb_state() { od -An -tu4 -j188 -N4 "$1" | tr -d ' '; }
# crash IMG SRC -- kill -9 a `ubjfs cp SRC IMG:/big` while the image is
# mounted; 0 once the image is left in state MOUNTED
crash() {
  local d
  for d in 0.1 0.2 0.4 0.8 1.6; do
    { timeout -s KILL "$d" "$U" cp "$2" "$1:/big" || true; } >/dev/null 2>&1
    [ "$(sb_state "$1")" = 2 ] && return 0
    "$U" mkfs -q -f -s 256M "${@:3}" "$1" >/dev/null 2>&1 || return 1
  done
  return 1
}
# settle IMG -- wait until the killed cp's lock on IMG is gone
settle() {
  local i
  for ((i = 0; i < 50; i++)); do
    "$U" inspect "$1" >/dev/null 2>&1 || true
    flock -n "$1" true 2>/dev/null && return 0
    sleep 0.1
  done
}

printf 'hello\n' >"$tmp/f"
mkdir "$tmp/dir"

# --- --nvm on every tool that opens an image -----------------------------------
nvm=$shm/u.nvm
ui=$tmp/u.img
run 0 "$U" mkfs -q -s 16M -m ubj --nvm "$nvm" "$ui"
run 1 env -u UBJFS_NVM "$U" ls "$ui:/"
one_line "^ubjfs ls: .*u\.img: cannot mount: a mode-ubj image needs its NVM region.*pass --nvm PATH"
grep -q nvm_path "$tmp/err" && fail "ls names the internal field nvm_path: $(cat "$tmp/err")"
run 0 env -u UBJFS_NVM "$U" cp --nvm "$nvm" "$tmp/f" "$ui:/f"
run 0 env -u UBJFS_NVM "$U" ls --nvm "$nvm" -l "$ui:/"
grep -q ' f$' "$tmp/out" || fail "ls --nvm does not list f: $(cat "$tmp/out")"
run 0 env -u UBJFS_NVM "$U" cat --nvm "$nvm" "$ui:/f"
[ "$(cat "$tmp/out")" = hello ] || fail "cat --nvm: $(cat "$tmp/out")"
run 0 env -u UBJFS_NVM "$U" stat --nvm "$nvm" "$ui:/f"
grep -q 'Size: 6' "$tmp/out" || fail "stat --nvm: $(cat "$tmp/out")"
run 0 env -u UBJFS_NVM "$U" inspect --nvm "$nvm" "$ui"
grep -q '^mount: *ok' "$tmp/out" || fail "inspect --nvm does not mount: $(cat "$tmp/out")"
run 0 env -u UBJFS_NVM "$U" cp --nvm "$nvm" "$ui:/f" "$tmp/back"
cmp -s "$tmp/f" "$tmp/back" || fail "cp --nvm out: the copy differs"
for t in ls cat stat cp inspect; do
  run 0 "$U" "$t" --help
  grep -q -- '--nvm PATH' "$tmp/out" || fail "$t --help does not mention --nvm PATH"
done
run 1 env -u UBJFS_NVM "$U" inspect "$ui"
one_line "pass --nvm PATH"
run 2 "$U" cat --nvm "" "$ui:/f"
grep -q -- "--nvm needs" "$tmp/err" || fail "cat --nvm '': $(cat "$tmp/err")"

# --- fsck: a region that is not one; a crashed mode-ubj image without it ----------
run 8 "$U" fsck --nvm /dev/null "$ui"
grep -qE ': *$' "$tmp/err" && fail "fsck --nvm /dev/null: an empty reason: $(cat "$tmp/err")"
grep -qE '/dev/null: [A-Za-z]' "$tmp/err" || fail "fsck --nvm /dev/null: no reason: $(cat "$tmp/err")"
head -c $((200 * 1024 * 1024)) /dev/zero | tr '\0' 'u' >"$tmp/big"
ci=$shm/crash-ubj.img
cn=$shm/crash-ubj.nvm
run 0 "$U" mkfs -q -s 256M -m ubj --nvm "$cn" "$ci"
if UBJFS_NVM=$cn crash "$ci" "$tmp/big" -m ubj --nvm "$cn"; then
  settle "$ci"
  run 4 env -u UBJFS_NVM "$U" fsck -n "$ci"   # never "clean": half unseen
  grep -q "last mounted in mode ubj.*pass --nvm" "$tmp/out" ||
    fail "fsck of a crashed ubj image without --nvm gives no hint: $(cat "$tmp/out")"
  grep -q "not known to be clean" "$tmp/out" ||
    fail "fsck of a crashed ubj image without --nvm: $(cat "$tmp/out")"
  run 0 "$U" fsck -n --nvm "$cn" "$ci"
  grep -q "pass --nvm" "$tmp/out" && fail "fsck --nvm still hints at --nvm: $(cat "$tmp/out")"
else
  fail "could not leave a mode-ubj image crashed (state $(sb_state "$ci"))"
fi

# --- fsck -y leaves the state clean -------------------------------------------------
ni=$shm/crash-none.img
run 0 "$U" mkfs -q -s 256M "$ni"
if crash "$ni" "$tmp/big"; then
  settle "$ni"
  rc=0
  "$U" fsck -y "$ni" >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" -le 1 ] || fail "fsck -y of a crashed image exited $rc: $(cat "$tmp/out")"
  [ "$(sb_state "$ni")" = 1 ] || fail "fsck -y left state $(sb_state "$ni") (want 1, clean)"
  run 0 "$U" fsck -n "$ni"
  grep -q "not cleanly unmounted" "$tmp/out" && fail "fsck after fsck -y: $(cat "$tmp/out")"
else
  fail "could not leave an image crashed (state $(sb_state "$ni"))"
fi
rm -f "$tmp/big" "$ci" "$cn" "$ni"

# --- cp: a missing directory with a trailing '/'; a directory as the image ---------
img=$tmp/n.img
run 0 "$U" mkfs -q -s 8M "$img"
run 1 "$U" cp "$tmp/f" "$img:/nodir/"
one_line "cannot create regular file '.*n\.img:/nodir/': Not a directory"
run 0 "$U" ls "$img:/"
[ -s "$tmp/out" ] && fail "cp to img:/nodir/ created: $(cat "$tmp/out")"
run 0 "$U" cp -r "$tmp/dir" "$img:/newdir/"            # a directory may be named so
run 0 "$U" stat "$img:/newdir"
grep -q 'directory' "$tmp/out" || fail "cp -r DIR img:/newdir/ made no directory"
run 1 "$U" cp "$tmp/f" "$tmp/dir:/x"
one_line "dir: is a directory, not an image"
run 1 "$U" ls "$tmp/dir:/"
one_line "is a directory"

# --- mount -o bogus: one line --------------------------------------------------------
mkdir "$tmp/mnt"
run 2 "$U" mount -o bogus "$img" "$tmp/mnt"   # a usage error (exit 2)
one_line "^ubjfs mount: bad mount options: unknown option.*bogus"

[ "$fails" -eq 0 ] || exit 1
echo "usability: ok"
