# Read by ctest (tests/CMakeLists.txt: TEST_INCLUDE_FILES) after the framework
# tests were discovered: the slow ones run only when SHARDPROOF_SLOW_TESTS is
# set, and are listed as "Disabled" (did not run) otherwise.
#   SHARDPROOF_SLOW_TESTS=1 ctest --test-dir build -L slow -j2
if(slow_framework_tests AND NOT "$ENV{SHARDPROOF_SLOW_TESTS}")
  set_tests_properties(${slow_framework_tests} PROPERTIES DISABLED TRUE)
endif()
