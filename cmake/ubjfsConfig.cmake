# ubjfsConfig.cmake -- find_package(ubjfs): the imported targets
# ubjfs::ubjfs (libubjfs.so) and ubjfs::ubjfs_static (libubjfs.a, which
# needs libisal, libuuid, libpmem, libm and threads).  Installed by
# cmake/install.cmake.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include(${CMAKE_CURRENT_LIST_DIR}/ubjfsTargets.cmake)
