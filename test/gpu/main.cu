// doctest's main for ktune_gpu_tests. With no CUDA device visible it runs nothing and returns 77,
// which CMake's SKIP_RETURN_CODE turns into "skipped" in ctest (not "passed", not "failed").
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "ktune/device.hpp"

int main(int argc, char** argv) {
  if (ktune::cuda_device_count() == 0) {
    std::printf("ktune GPU tests: no CUDA device found - SKIPPED\n");
    return 77;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
