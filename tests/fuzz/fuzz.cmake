# tests/fuzz/fuzz.cmake -- the in-tree fuzzing of issue 22 (docs/GUARANTEES.md,
# "Fuzzing"), included at the end of the top CMakeLists.txt.
#  - ubjfs_fuzz: the field table loader, container, mutator, targets and
#    seed maker (tests/fuzz/lib), linked into the tests fuzz_replay and
#    fuzz_fields_doc (made by the top file from tests/fuzz/*.c) in every build;
#  - with clang (-fsanitize=fuzzer): ubjfs_fuzz_{mount,recover,fsck}, the
#    libFuzzer binaries, over a copy of the library built with coverage and
#    ASan+UBSan, and one bounded CTest run of each (label fuzz, UBJ_FUZZ_SECONDS
#    each, default 40) from the seeds the test fuzz_seeds makes;
#  - AFL++: tests/fuzz/afl-run (long runs, not in CI).
file(GLOB UBJ_FUZZ_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/lib/*.c)
set(UBJ_FUZZ_DEFS UBJ_FUZZ_FIELDS_DEFAULT="${CMAKE_SOURCE_DIR}/tests/fuzz/fields.tsv")
add_library(ubjfs_fuzz STATIC ${UBJ_FUZZ_SRC})
target_include_directories(ubjfs_fuzz PUBLIC ${CMAKE_SOURCE_DIR}/tests/fuzz/lib ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(ubjfs_fuzz PRIVATE ${UBJ_FUZZ_DEFS})
target_link_libraries(ubjfs_fuzz PUBLIC ubjfs_eval)
# reasons and messages are cut to their buffers on purpose: gcc's
# -Wformat-truncation (seen at -Os) is not a finding there
set(UBJ_FUZZ_WARN $<$<C_COMPILER_ID:GNU>:-Wno-format-truncation>)
target_compile_options(ubjfs_fuzz PRIVATE ${UBJ_FUZZ_WARN})
foreach(t fuzz_replay fuzz_fields_doc fuzz_matrix fuzz_damage)
  if(TARGET ${t})
    target_link_libraries(${t} PRIVATE ubjfs_fuzz)
    target_compile_options(${t} PRIVATE ${UBJ_FUZZ_WARN})
  endif()
endforeach()
set(UBJ_FUZZ_WORK ${CMAKE_BINARY_DIR}/fuzz)
file(MAKE_DIRECTORY ${UBJ_FUZZ_WORK})
set(UBJ_FUZZ_ENV "UBJ_SRC=${CMAKE_SOURCE_DIR}")
add_test(NAME fuzz_seeds COMMAND fuzz_replay --seeds ${UBJ_FUZZ_WORK}/seeds)
set_tests_properties(fuzz_seeds PROPERTIES LABELS fuzz FIXTURES_SETUP fuzz_seeds
  ENVIRONMENT "${UBJ_FUZZ_ENV}")

include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_c_source_compiles("
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
  UBJ_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
set(UBJ_FUZZ_SECONDS 40 CACHE STRING "seconds of each bounded libFuzzer run in CTest")
if(UBJ_HAVE_LIBFUZZER)
  # the library again, with coverage for the fuzzer and ASan+UBSan
  set(UBJ_FUZZ_LIBSRC ${UBJ_CORE_SRC} ${UBJ_EVAL_SRC})   # the top file's globs
  set(UBJ_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer -g)
  add_library(ubjfs_fuzzcov STATIC ${UBJ_FUZZ_LIBSRC} ${UBJ_FUZZ_SRC})
  target_compile_options(ubjfs_fuzzcov PRIVATE ${UBJ_FUZZ_FLAGS})
  target_compile_definitions(ubjfs_fuzzcov PRIVATE ${UBJ_FUZZ_DEFS} UBJ_SANITIZE=1)
  target_include_directories(ubjfs_fuzzcov PUBLIC ${CMAKE_SOURCE_DIR}/include
    ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/fuzz/lib ${ISAL_INC})
  target_link_libraries(ubjfs_fuzzcov PUBLIC ${ISAL_LIB} ${UUID_LIB} ${PMEM_LIB}
    ${SQLITE3_LIB} m Threads::Threads)
  foreach(tg mount recover fsck)
    add_executable(ubjfs_fuzz_${tg} ${CMAKE_SOURCE_DIR}/tests/fuzz/targets/libfuzzer.c)
    target_compile_definitions(ubjfs_fuzz_${tg} PRIVATE FZ_TARGET=${tg})
    target_compile_options(ubjfs_fuzz_${tg} PRIVATE ${UBJ_FUZZ_FLAGS})
    target_link_options(ubjfs_fuzz_${tg} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(ubjfs_fuzz_${tg} PRIVATE ubjfs_fuzzcov)
    add_test(NAME fuzz_libfuzzer_${tg}
      COMMAND ${CMAKE_COMMAND} -E env ${UBJ_FUZZ_ENV}
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
        ${CMAKE_SOURCE_DIR}/tests/fuzz/run-libfuzzer $<TARGET_FILE:ubjfs_fuzz_${tg}>
        ${UBJ_FUZZ_WORK}/work-${tg} ${UBJ_FUZZ_WORK}/seeds ${UBJ_FUZZ_SECONDS})
    set_tests_properties(fuzz_libfuzzer_${tg} PROPERTIES LABELS fuzz TIMEOUT 900
      FIXTURES_REQUIRED fuzz_seeds)
  endforeach()
endif()

# AFL++ (long runs only): tests/fuzz/afl-run builds the same targets with
# afl-clang-fast and runs one (docs/GUARANTEES.md, "Fuzzing").
