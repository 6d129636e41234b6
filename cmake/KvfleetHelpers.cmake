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
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})  # tests/support/
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
