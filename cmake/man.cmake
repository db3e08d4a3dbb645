# cmake/man.cmake -- one man page: help2man over `PROG [SUB] --help`
# (cmake -P; cmake/install.cmake passes HELP2MAN PROG SUB PAGE WHAT VERSION
# INCLUDE OUT).  A subcommand's page is titled PAGE (UBJFS-MOUNT), not
# PROG; INCLUDE, where it exists, adds sections (help2man --include).
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
set(opt --help)
if(SUB)
  set(opt "${SUB} --help")
endif()
set(inc "")
if(EXISTS "${INCLUDE}")
  set(inc "--include=${INCLUDE}")
endif()
execute_process(COMMAND ${HELP2MAN} --no-info --section=8
    "--help-option=${opt}" --version-string=${VERSION} "--name=${WHAT}"
    ${inc} --output=${OUT}.tmp ${PROG}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man ${PAGE}: exit ${rc}")
endif()
file(READ ${OUT}.tmp text)
string(TOUPPER "${PAGE}" title)
get_filename_component(base ${PROG} NAME)
string(TOUPPER "${base}" ptitle)
string(REPLACE ".TH ${ptitle} " ".TH ${title} " text "${text}")
if(SUB)
  string(REPLACE "\n${base} \\- " "\n${PAGE} \\- " text "${text}")
endif()
file(WRITE ${OUT} "${text}")
file(REMOVE ${OUT}.tmp)
