# cmake/install.cmake -- what `cmake --install` puts where (GNUInstallDirs;
# DESTDIR staging works, nothing goes outside the prefix):
#   lib/       libubjfs.so.MAJOR.MINOR.PATCH, .so.MAJOR, .so; libubjfs.a;
#              pkgconfig/ubjfs.pc; cmake/ubjfs/ (find_package: ubjfs::ubjfs,
#              ubjfs::ubjfs_static); libubjfs-eval.a only with UBJ_INSTALL_EVAL
#   include/ubjfs/*.h
#   bin/       ubjfs, mkfs.ubjfs and fsck.ubjfs (symlinks to it)
#   share/man/man8/  ubjfs.8, ubjfs-CMD.8 per subcommand, mkfs.ubjfs.8,
#              fsck.ubjfs.8 (help2man from each --help; UBJ_MAN)
#   share/doc/ubjfs/  README.md and docs/*.md
# Included by CMakeLists.txt after the targets are defined.

install(TARGETS ubjfs_shared EXPORT ubjfsTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
  NAMELINK_COMPONENT dev)
install(TARGETS ubjfs_core EXPORT ubjfsTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# find_package(ubjfs): targets ubjfs::ubjfs (shared), ubjfs::ubjfs_static
set(UBJ_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ubjfs)
install(EXPORT ubjfsTargets NAMESPACE ubjfs:: DESTINATION ${UBJ_CMAKEDIR} COMPONENT dev)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ubjfsConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/ubjfsConfig.cmake
  ${CMAKE_BINARY_DIR}/ubjfsConfigVersion.cmake DESTINATION ${UBJ_CMAKEDIR} COMPONENT dev)
install(FILES ${UBJ_PUBLIC_HEADERS}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ubjfs COMPONENT dev)
if(UBJ_INSTALL_EVAL)
  # an archive for the project's own evaluation programs: it has no public
  # header (src/bench/harness.h and src/crash/crash.h are internal) and
  # holds the core's objects with their internal names: linked instead of
  # libubjfs.a (whose names it defines too), never beside it
  install(TARGETS ubjfs_eval ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT eval)
endif()

# ubjfs.pc: the dependencies of the static library in Requires.private
# (they have .pc files) and Libs.private (libm, threads).  Written at
# install time (cmake/pc.cmake), so `cmake --install --prefix DIR` gets
# DIR in it, not the configured prefix.
install(CODE "set(UBJ_PC_IN \"${CMAKE_CURRENT_LIST_DIR}/ubjfs.pc.in\")
  set(UBJ_PC_OUT \"${CMAKE_BINARY_DIR}/ubjfs.pc\")
  set(UBJ_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(UBJ_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(UBJ_VERSION \"${PROJECT_VERSION}\")" COMPONENT dev)
install(SCRIPT ${CMAKE_CURRENT_LIST_DIR}/pc.cmake COMPONENT dev)

if(TARGET ubjfs)
  install(TARGETS ubjfs RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  foreach(alias mkfs.ubjfs fsck.ubjfs)
    install(CODE "set(bindir \"${CMAKE_INSTALL_BINDIR}\")
      if(NOT IS_ABSOLUTE \"\${bindir}\")
        set(bindir \"\${CMAKE_INSTALL_PREFIX}/\${bindir}\")
      endif()
      set(link \"\$ENV{DESTDIR}\${bindir}/${alias}\")
      message(STATUS \"Installing: \${link} -> ubjfs\")
      file(CREATE_LINK ubjfs \"\${link}\" SYMBOLIC)
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${link}\")"
      COMPONENT tools)
  endforeach()
endif()

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools)
file(GLOB UBJ_DOCS CONFIGURE_DEPENDS docs/*.md)
install(FILES ${UBJ_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT tools)

# man pages, section 8: help2man renders each --help (so a page never
# disagrees with the program); cmake/man.cmake runs it.  Cross builds,
# whose tool cannot run here, turn UBJ_MAN off.
if(UBJ_MAN AND TARGET ubjfs)
  find_program(HELP2MAN help2man)
  if(NOT HELP2MAN)
    message(FATAL_ERROR "UBJ_MAN: help2man not found (Debian: apt-get install "
      "help2man; or -DUBJ_MAN=OFF to install no man pages)")
  endif()
  # page, program (in the build directory), its arguments before --help, NAME line
  set(UBJ_MAN_PAGES
    "ubjfs|ubjfs||the ubjfs file system's command-line tool"
    "mkfs.ubjfs|mkfs.ubjfs||make a ubjfs file system"
    "fsck.ubjfs|fsck.ubjfs||check and repair a ubjfs file system"
    "ubjfs-mkfs|ubjfs|mkfs|make a ubjfs file system"
    "ubjfs-fsck|ubjfs|fsck|check and repair a ubjfs file system"
    "ubjfs-mount|ubjfs|mount|mount a ubjfs image through FUSE"
    "ubjfs-cp|ubjfs|cp|copy files into or out of a ubjfs image"
    "ubjfs-ls|ubjfs|ls|list a directory of a ubjfs image"
    "ubjfs-cat|ubjfs|cat|print files of a ubjfs image"
    "ubjfs-stat|ubjfs|stat|print the attributes of a file in a ubjfs image"
    "ubjfs-inspect|ubjfs|inspect|print the superblock and layout of a ubjfs image"
    "ubjfs-bench|ubjfs|bench|run ubjfs's benchmarks"
    "ubjfs-crashtest|ubjfs|crashtest|explore crash states of workloads in each mode")
  set(UBJ_MAN_OUT "")
  file(GLOB UBJ_MAN_INCLUDES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/man-*.h2m)
  foreach(entry ${UBJ_MAN_PAGES})
    string(REPLACE "|" ";" f "${entry}")
    list(GET f 0 page)
    list(GET f 1 prog)
    list(GET f 2 sub)
    list(GET f 3 what)
    set(out ${CMAKE_BINARY_DIR}/man/${page}.8)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -DHELP2MAN=${HELP2MAN} -DPROG=${CMAKE_BINARY_DIR}/${prog}
        -DSUB=${sub} -DPAGE=${page} "-DWHAT=${what}" -DVERSION=${PROJECT_VERSION}
        -DINCLUDE=${CMAKE_CURRENT_LIST_DIR}/man-${page}.h2m -DOUT=${out}
        -P ${CMAKE_CURRENT_LIST_DIR}/man.cmake
      DEPENDS ubjfs ${CMAKE_CURRENT_LIST_DIR}/man.cmake ${UBJ_MAN_INCLUDES}
      COMMENT "help2man ${page}.8" VERBATIM)
    list(APPEND UBJ_MAN_OUT ${out})
  endforeach()
  add_custom_target(ubjfs_man ALL DEPENDS ${UBJ_MAN_OUT})
  install(FILES ${UBJ_MAN_OUT} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT tools)
endif()
