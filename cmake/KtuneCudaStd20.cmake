# KtuneCudaStd20.cmake — let `cuda_std_20` work with CMake versions that predate nvcc's C++20 support.
#
# CMake 3.25 knows nvcc only up to C++17 (CMAKE_CUDA_COMPILE_FEATURES stops at cuda_std_17), so the
# compile feature cuda_std_20 that ktune::ktune requires fails with "not known to CUDA compiler".
# nvcc has accepted -std=c++20 since CUDA 12.0; when the CUDA language is enabled, the compiler is such
# an nvcc and CMake lacks the feature, this teaches CMake the flag. Newer CMake versions are untouched.
# Include it after the CUDA language is enabled, in the directory that defines the targets (or above).
# Afterwards KTUNE_CUDA_STD20_SHIM is ON when it had to step in.
set(KTUNE_CUDA_STD20_SHIM OFF)
if(CMAKE_CUDA_COMPILER_LOADED
   AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
   AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0
   AND NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
  set(KTUNE_CUDA_STD20_SHIM ON)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
