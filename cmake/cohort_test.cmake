# cohort_cc_test(NAME <name> SRCS <files...> DEPS <targets...> LABELS <labels...> [TIMEOUT s])
# Builds a GoogleTest binary and registers it with ctest under the given labels
# (`unit`: fast, in-process; `multiprocess`: spawns real worker processes).
function(cohort_cc_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "COHORT_BIN_DIR=${CMAKE_BINARY_DIR}/bin;COHORT_TEST_BIN_DIR=${CMAKE_BINARY_DIR}/tests;OPENBLAS_NUM_THREADS=1")
endfunction()
