# kvfleet_warnings(<target>): the project's warning set.
function(kvfleet_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter>)
endfunction()

# kvfleet_add_test(<name> SOURCES <files...> [LIBS <targets...>] [LABELS <labels...>]
#                  [TIMEOUT <seconds>] [WHOLE])
# One line registers one GoogleTest program with ctest. Each test case becomes its own ctest entry
# (gtest_discover_tests), so `ctest -R` selects cases and failures name the case. WHOLE registers
# the program as one entry instead (for hundreds of parameterised cases that skip together, such
# as the GPU tests on a machine without a GPU: ctest then reports it as skipped).
function(kvfleet_add_test name)
  cmake_parse_arguments(T "WHOLE" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest_main GTest::gmock)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)  # support/*.h
  target_compile_definitions(${name} PRIVATE
    KVFLEET_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    KVFLEET_REFERENCE_DIR="${KVFLEET_REFERENCE_DIR}"
    KVFLEET_BINARY_DIR="${CMAKE_BINARY_DIR}")
  kvfleet_warnings(${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  if(T_WHOLE)
    add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
    return()
  endif()
  include(GoogleTest)
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()

# kvfleet_headers(<target> <folder> [PUBLIC|INTERFACE]): makes the headers of <folder> (relative
# to the source root) reachable as "<folder>/<file>.h" for <target> and what links it, and no
# other folder's: the folder is linked into a staging directory of its own under
# build/include/, which becomes the include directory (the source root never does).
function(kvfleet_headers target folder)
  string(REPLACE "/" "_" stage_name "${folder}")
  set(stage ${CMAKE_BINARY_DIR}/include/${stage_name})
  get_filename_component(parent "${stage}/${folder}" DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT EXISTS ${stage}/${folder})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${folder} ${stage}/${folder} SYMBOLIC)
  endif()
  set(scope PUBLIC)
  if(ARGC GREATER 2)
    set(scope ${ARGV2})
  endif()
  target_include_directories(${target} ${scope} ${stage})
endfunction()

# kvfleet_layer(<name> [SOURCES <files...>] [DEPS <layers...>] [LIBS <libs...>]
#               [PRIVATE_LIBS <libs...>]): the library kvfleet_<name> of the layer sim/<name>,
# linking the layers below it that it uses (DEPS, publicly: their headers appear in its own).
function(kvfleet_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS;LIBS;PRIVATE_LIBS" ${ARGN})
  set(deps)
  foreach(d ${L_DEPS})
    list(APPEND deps kvfleet_${d})
  endforeach()
  if(L_SOURCES)
    add_library(kvfleet_${name} STATIC ${L_SOURCES})
    # The Python module links these into a shared object: position-independent code, with
    # calls inside the library still bound locally (no interposition: inlining as before).
    if(KVFLEET_WITH_PYTHON)
      set_target_properties(kvfleet_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_compile_options(kvfleet_${name} PRIVATE -fno-semantic-interposition)
      endif()
    endif()
    kvfleet_headers(kvfleet_${name} sim/${name} PUBLIC)
    target_link_libraries(kvfleet_${name} PUBLIC ${deps} ${L_LIBS} PRIVATE ${L_PRIVATE_LIBS})
    kvfleet_warnings(kvfleet_${name})
  else()
    add_library(kvfleet_${name} INTERFACE)
    kvfleet_headers(kvfleet_${name} sim/${name} INTERFACE)
    target_link_libraries(kvfleet_${name} INTERFACE ${deps} ${L_LIBS})
  endif()
  add_library(kvfleet::${name} ALIAS kvfleet_${name})
endfunction()
