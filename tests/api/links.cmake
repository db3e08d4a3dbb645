# links.cmake -- `cmake -DBIN=PATH -P links.cmake`: fails unless the
# program BIN (a tests/api program, linked with --no-as-needed) needs no
# SQLite and holds nothing of the evaluation library (src/bench,
# src/crash): a user of the core library does not link them.
execute_process(COMMAND readelf -d ${BIN} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BIN} failed (${rc})")
endif()
if(dyn MATCHES "sqlite")
  message(FATAL_ERROR "${BIN} needs SQLite:\n${dyn}")
endif()
execute_process(COMMAND nm ${BIN} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${BIN} failed (${rc})")
endif()
string(REGEX MATCHALL "[^\n]* (sqlite3_[A-Za-z0-9_]*|cx_[A-Za-z0-9_]*|bh_[A-Za-z0-9_]*)\n" bad "${syms}")
if(bad)
  message(FATAL_ERROR "${BIN} holds SQLite or evaluation symbols:\n${bad}")
endif()
message(STATUS "${BIN}: no SQLite, no evaluation library")
