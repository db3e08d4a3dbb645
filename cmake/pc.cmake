# cmake/pc.cmake -- install ubjfs.pc (an install script: cmake/install.cmake
# sets UBJ_PC_IN UBJ_PC_OUT UBJ_LIBDIR UBJ_INCLUDEDIR UBJ_VERSION first).
# The paths are the install-time prefix's, relative to ${prefix} where the
# GNUInstallDirs directories are relative.
set(prefix "${CMAKE_INSTALL_PREFIX}")
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${UBJ_${d}}")
    set(pc_${d} "${UBJ_${d}}")
    set(abs_${d} "${UBJ_${d}}")
  else()
    set(pc_${d} "\${prefix}/${UBJ_${d}}")
    set(abs_${d} "${prefix}/${UBJ_${d}}")
  endif()
endforeach()
configure_file("${UBJ_PC_IN}" "${UBJ_PC_OUT}" @ONLY)
file(INSTALL DESTINATION "${abs_LIBDIR}/pkgconfig" TYPE FILE FILES "${UBJ_PC_OUT}")
