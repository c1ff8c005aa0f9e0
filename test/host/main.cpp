// doctest's main for ktune_host_tests: every other test/host/*.cpp holds only test cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
