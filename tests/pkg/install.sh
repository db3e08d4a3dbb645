#!/usr/bin/env bash
# tests/pkg/install.sh -- `cmake --install` as a package build uses it:
# into a DESTDIR staging tree, the exact file list under the prefix and
# nothing outside it; the soname links; only the public API exported from
# the shared library and defined globally in the static one (a program
# naming a function as an internal one links with it); the installed
# headers compiling alone (strict C11, and C++11);
# the man pages rendering; then the README's library example built with
# `pkg-config --cflags --libs ubjfs` against the staged tree (sysroot) and
# run, linked shared and static; and once more against an install with
# --prefix DIR (ubjfs.pc must name DIR), and through find_package(ubjfs)
# (ubjfs::ubjfs, ubjfs::ubjfs_static).  Uses the build directory of
# $UBJ_TOOL, which CTest runs after a whole build.
. "$(dirname "$0")/../common/lib.sh" pkg-install
build=$(dirname "$UBJ_TOOL")
src=${UBJ_SRC:?}
for p in cmake cc pkg-config nm readelf groff; do
  command -v "$p" >/dev/null || test_skip "no $p (scripts/install-deps)"
done
[ -f "$build/cmake_install.cmake" ] || test_skip "$build is not a CMake build directory"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")
btype=${btype:-RelWithDebInfo}           # CMakeLists.txt's default
grep -q '^UBJ_INSTALL_EVAL:BOOL=ON' "$build/CMakeCache.txt" && eval_on=1 || eval_on=0
grep -q '^UBJ_MAN:BOOL=OFF' "$build/CMakeCache.txt" && man_on=0 || man_on=1
[ "$man_on" = 1 ] || skip_part "the man pages (this build has UBJ_MAN=OFF)"
st=$tmp/stage

# --- DESTDIR staging -------------------------------------------------------
run 0 env DESTDIR="$st" cmake --install "$build"
# every file and link, relative to the staging root
(cd "$st" && find . ! -type d | sed 's|^\./|/|' | LC_ALL=C sort) >"$tmp/got"
{
  for f in ubjfs mkfs.ubjfs fsck.ubjfs; do echo "$prefix/bin/$f"; done
  for f in libubjfs.so libubjfs.so.0 libubjfs.so.0.1.0 libubjfs.a pkgconfig/ubjfs.pc; do
    echo "$prefix/$libdir/$f"
  done
  for f in ubjfsConfig.cmake ubjfsConfigVersion.cmake ubjfsTargets.cmake \
           "ubjfsTargets-${btype,,}.cmake"; do
    echo "$prefix/$libdir/cmake/ubjfs/$f"
  done
  [ "$eval_on" = 0 ] || echo "$prefix/$libdir/libubjfs-eval.a"
  for h in "$src"/include/ubjfs/*.h; do echo "$prefix/include/ubjfs/${h##*/}"; done
  for p in ubjfs mkfs.ubjfs fsck.ubjfs ubjfs-mkfs ubjfs-fsck ubjfs-mount ubjfs-cp \
           ubjfs-ls ubjfs-cat ubjfs-stat ubjfs-inspect ubjfs-bench ubjfs-crashtest; do
    [ "$man_on" = 0 ] || echo "$prefix/share/man/man8/$p.8"
  done
  echo "$prefix/share/doc/ubjfs/README.md"
  for d in "$src"/docs/*.md; do echo "$prefix/share/doc/ubjfs/docs/${d##*/}"; done
} | LC_ALL=C sort >"$tmp/want"
diff "$tmp/want" "$tmp/got" >"$tmp/diff" || fail "installed files differ (- wanted, + got): $(cat "$tmp/diff")"
outside=$(cd "$st" && find . -mindepth 1 | sed 's|^\.||' | while read -r f; do
  case $prefix/ in "$f"/*) ;; *) case $f in "$prefix"/*) ;; *) echo "$f";; esac;; esac
done)
[ -z "$outside" ] || fail "installed outside the prefix $prefix: $outside"
L=$st$prefix/$libdir
B=$st$prefix/bin
[ "$(readlink "$B/mkfs.ubjfs")" = ubjfs ] && [ "$(readlink "$B/fsck.ubjfs")" = ubjfs ] ||
  fail "mkfs.ubjfs/fsck.ubjfs are not symlinks to ubjfs"
[ "$(readlink "$L/libubjfs.so")" = libubjfs.so.0 ] &&
  [ "$(readlink "$L/libubjfs.so.0")" = libubjfs.so.0.1.0 ] ||
  fail "soname links: $(ls -l "$L"/libubjfs.so*)"
soname=$(readelf -d "$L/libubjfs.so.0.1.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libubjfs.so.0 ] || fail "SONAME is '$soname', want libubjfs.so.0"
grep -q 'Version: 0.1.0' "$L/pkgconfig/ubjfs.pc" || fail "ubjfs.pc has no Version 0.1.0"

# --- exports: exactly the functions the public headers declare -------------
grep -hE '^[a-z].*[ *]ubj_[a-z0-9_]+\(' "$src"/include/ubjfs/*.h |
  grep -oE 'ubj_[a-z0-9_]+\(' | tr -d '(' | LC_ALL=C sort -u >"$tmp/api"
nm -D --defined-only "$L/libubjfs.so.0" | awk '$2 != "A" {print $3}' |
  sed 's/@.*//' | LC_ALL=C sort -u >"$tmp/exports"
diff "$tmp/api" "$tmp/exports" >"$tmp/diff" ||
  fail "exported symbols differ from include/ubjfs/'s functions (- header, + exported): $(head -c 800 "$tmp/diff")"
[ "$(wc -l <"$tmp/api")" -gt 50 ] || fail "only $(wc -l <"$tmp/api") functions found in the headers"
nm -D --defined-only "$L/libubjfs.so.0" | grep -qE ' (ck_|fs_|cx_|cache_|nvm_|jnl_)' &&
  fail "an internal symbol is exported: $(nm -D --defined-only "$L/libubjfs.so.0" | grep -E ' (ck_|fs_|cx_)' | head -3)"
# the static library: no global definition but the public functions (an
# internal name would collide with a name of a program linking it)
nm -g --defined-only "$L/libubjfs.a" | awk 'NF == 3 {print $3}' |
  LC_ALL=C sort -u >"$tmp/aglobals"
LC_ALL=C comm -23 "$tmp/aglobals" "$tmp/api" >"$tmp/extra"
[ ! -s "$tmp/extra" ] ||
  fail "libubjfs.a defines $(wc -l <"$tmp/extra") global names outside include/ubjfs/'s functions: $(head -5 "$tmp/extra" | tr '\n' ' ')"
[ -s "$tmp/aglobals" ] || fail "libubjfs.a defines no global name (nm)"
"$B/ubjfs" version >/dev/null || fail "the installed ubjfs does not run"

# --- the installed headers alone, strict C11; the man pages render ----------
for h in "$st$prefix"/include/ubjfs/*.h; do
  run 0 cc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only \
    -I"$st$prefix/include" -x c "$h"
done
# and from C++ (they say extern "C"), where a C++ compiler is installed
if command -v c++ >/dev/null; then
  for h in "$st$prefix"/include/ubjfs/*.h; do
    run 0 c++ -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only \
      -I"$st$prefix/include" -x c++ "$h"
  done
else
  skip_part "the headers from C++ (no c++)"
fi
# a C++ caller links only through extern "C" (-fsyntax-only cannot see it)
for h in "$st$prefix"/include/ubjfs/*.h; do
  grep -q 'extern "C"' "$h" || fail "$h: no extern \"C\" block: C++ callers cannot link"
done
for m in "$st$prefix"/share/man/man8/*.8; do
  [ "$man_on" = 1 ] || break
  groff -man -Tutf8 -ww -z "$m" 2>"$tmp/groff" || fail "$m: groff failed"
  [ ! -s "$tmp/groff" ] || fail "$m: groff warns: $(head -c 300 "$tmp/groff")"
  grep -q '^\.SH OPTIONS\|^\.SH DESCRIPTION' "$m" || fail "$m: no DESCRIPTION/OPTIONS section"
done
[ "$man_on" = 0 ] || grep -q 'fuse.ubjfs' "$st$prefix/share/man/man8/ubjfs-mount.8" ||
  fail "ubjfs-mount.8 does not tell about mount -t fuse.ubjfs"

# --- the README's example, through pkg-config ----------------------------
awk '/<!-- tests\/pkg\/install.sh: example -->/ {f = 1; next}
     f && /^```c/ {g = 1; next}  g && /^```/ {exit}  g' "$src/README.md" >"$tmp/hello.c"
grep -q 'int main' "$tmp/hello.c" || fail "no library example found in README.md"
# hello IMAGE -- the example wrote /hello = "hi" into a fresh image
check_hello() {
  local exe=$1 img=$tmp/$2.img
  shift 2
  run 0 "$B/mkfs.ubjfs" --size 64M "$img"
  run 0 "$@" "$exe" "$img"
  run 0 "$B/ubjfs" cat "$img:/hello"
  [ "$(cat "$tmp/out")" = hi ] || fail "$exe: /hello holds '$(cat "$tmp/out")'"
  run 0 "$B/fsck.ubjfs" -n "$img"
}
cflags=(-std=c11 -Wall -Wextra -pedantic -Werror)
# a sanitized build's library needs its runtime in the program too
if grep -q '^UBJ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  cflags+=(-fsanitize=address,undefined)
fi
export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$st
pc=$(pkg-config --cflags --libs ubjfs)
case $pc in *"-I$st$prefix/include"*"-L$L"*"-lubjfs"*) ;;
  *) fail "pkg-config --cflags --libs ubjfs: '$pc'";; esac
# shared: needs libubjfs.so.0, found through LD_LIBRARY_PATH in the stage
# shellcheck disable=SC2086
run 0 cc "${cflags[@]}" "$tmp/hello.c" $pc -o "$tmp/hello_shared"
readelf -d "$tmp/hello_shared" | grep -q 'NEEDED.*\[libubjfs.so.0\]' ||
  fail "hello_shared does not need libubjfs.so.0"
check_hello "$tmp/hello_shared" shared env LD_LIBRARY_PATH="$L"
# static: libubjfs.a and Libs.private/Requires.private's libraries only
static=$(pkg-config --static --libs ubjfs | sed 's/-lubjfs/-l:libubjfs.a/')
# shellcheck disable=SC2086
run 0 cc "${cflags[@]}" "$tmp/hello.c" $(pkg-config --cflags ubjfs) $static -o "$tmp/hello_static"
readelf -d "$tmp/hello_static" | grep -q 'libubjfs' && fail "hello_static needs a libubjfs.so"
check_hello "$tmp/hello_static" static env
# a program with a function named as an internal one (fs_start, meta.c)
# links statically: the name is its own
printf '%s\n' '#include <ubjfs/ubjfs.h>' 'int fs_start(void);' \
  'int fs_start(void) { return 7; }' \
  'int main(void) { return ubj_mount(0, 0, 0) < 0 ? fs_start() : 1; }' >"$tmp/clash.c"
# shellcheck disable=SC2086
run 0 cc "${cflags[@]}" "$tmp/clash.c" $(pkg-config --cflags ubjfs) $static -o "$tmp/clash"
run 7 "$tmp/clash"
unset PKG_CONFIG_SYSROOT_DIR

# --- --prefix DIR: ubjfs.pc and the links follow the install-time prefix ---
opt=$tmp/opt
run 0 cmake --install "$build" --prefix "$opt"
grep -qx "prefix=$opt" "$opt/$libdir/pkgconfig/ubjfs.pc" ||
  fail "ubjfs.pc after --prefix $opt: $(head -3 "$opt/$libdir/pkgconfig/ubjfs.pc")"
[ "$(readlink "$opt/bin/fsck.ubjfs")" = ubjfs ] || fail "no $opt/bin/fsck.ubjfs link"
export PKG_CONFIG_PATH=$opt/$libdir/pkgconfig
# shellcheck disable=SC2046
run 0 cc "${cflags[@]}" "$tmp/hello.c" $(pkg-config --cflags --libs ubjfs) -o "$tmp/hello_opt"
check_hello "$tmp/hello_opt" opt env LD_LIBRARY_PATH="$opt/$libdir"

# --- find_package(ubjfs): the CMake package's two targets ------------------
mkdir "$tmp/cm"
cp "$tmp/hello.c" "$tmp/cm/"
cat >"$tmp/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(hello C)
find_package(ubjfs 0.1 REQUIRED)
add_executable(hello_cm hello.c)
target_link_libraries(hello_cm PRIVATE ubjfs::ubjfs)
add_executable(hello_cm_static hello.c)
target_link_libraries(hello_cm_static PRIVATE ubjfs::ubjfs_static)
EOF
cmflags=()
if grep -q '^UBJ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  cmflags=(-DCMAKE_C_FLAGS=-fsanitize=address,undefined)
fi
run 0 cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$opt" "${cmflags[@]}"
run 0 cmake --build "$tmp/cm/build"
readelf -d "$tmp/cm/build/hello_cm" | grep -q 'NEEDED.*\[libubjfs.so.0\]' ||
  fail "hello_cm (ubjfs::ubjfs) does not need libubjfs.so.0"
readelf -d "$tmp/cm/build/hello_cm_static" | grep -q 'libubjfs' &&
  fail "hello_cm_static (ubjfs::ubjfs_static) needs a libubjfs.so"
check_hello "$tmp/cm/build/hello_cm" cm env
check_hello "$tmp/cm/build/hello_cm_static" cm_static env
echo "pkg-install: ok"
