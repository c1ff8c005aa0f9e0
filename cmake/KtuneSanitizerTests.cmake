# cmake/KtuneSanitizerTests.cmake — host tests under sanitizers (included by the top-level CMakeLists.txt
# when tests are built and doctest is found; not installed).
#
#   ktune_host_tests_asan   every host test (test/host/*.cpp), built with -fsanitize=address,undefined,
#                           float-cast-overflow -fno-sanitize-recover=all and libstdc++ assertions, linked
#                           with the default kernel instances as they are (the objects of ktune_instances,
#                           not rebuilt: nvcc's host code is not instrumented, the tests' code and every
#                           inline ktune header they use are), so the tests of the dispatch table (dispatch,
#                           families, conv_dispatch, split_k, routes, ktune-profile's models) run too.
#                           KTUNE_SANITIZE_TABLE_TESTS=OFF: only the tests that need no instance (measured on
#                           the 2-core machine: the table-dependent TUs take 175 s of CPU time with ASan, 10
#                           TUs of 4-27 s; all 24 host-test TUs 516 s; the run takes ~10 s)
#   ktune_host_tests_tsan   the tuner's concurrency and concurrent-cache-writer tests, -fsanitize=thread
#   ktune_fuzz_<t>_replay   each libFuzzer target of test/fuzz/ (built with this compiler and ASan+UBSan)
#                           run once over its committed corpus, test/fuzz/corpus/<t>/
#
# All are ctest tests with label `sanitize`; any sanitizer report fails the test (halt_on_error).
# KTUNE_SANITIZER_TESTS=OFF leaves them out.

option(KTUNE_SANITIZER_TESTS "Build the host tests again with ASan+UBSan and TSan (ctest label: sanitize)" ON)
option(KTUNE_SANITIZE_TABLE_TESTS "ASan+UBSan also for the host tests that read the instance table (links the instances)" ON)
# TRUE below when ktune_host_tests_asan compiles every test/host/*.cpp: it is then the `host` test too, and the
# plain build (ktune_host_tests) is left out unless KTUNE_PLAIN_HOST_TESTS (CMakeLists.txt).
set(KTUNE_ASAN_HAS_EVERY_HOST_TEST FALSE)

if(KTUNE_SANITIZER_TESTS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(STATUS "ktune: sanitizer tests need GCC or Clang as the C++ compiler; not built")
elseif(KTUNE_SANITIZER_TESTS)
  set(_san_dir "${PROJECT_SOURCE_DIR}/test/host")
  # Host-only test files: none of them reads gemm_table()/conv_table() contents.
  set(_san_asan_names main.cpp validation.cpp validation_limits_test.cpp resource_model.cpp tuner_json_test.cpp tuner_key_test.cpp
      tuner_cache_test.cpp tuner_logic_test.cpp tuner_backend_test.cpp tuner_concurrency_test.cpp tuner_tactics_test.cpp
      conv_validation.cpp validation_config_test.cpp)
  if(KTUNE_SANITIZE_TABLE_TESTS AND TARGET ktune_instances)
    # Every host test, the table-dependent ones included.
    file(GLOB _san_all CONFIGURE_DEPENDS "${_san_dir}/*.cpp")
    set(_san_asan_names "")
    foreach(_f IN LISTS _san_all)
      get_filename_component(_n "${_f}" NAME)
      list(APPEND _san_asan_names "${_n}")
    endforeach()
  endif()
  set(_san_tsan_names main.cpp tuner_concurrency_test.cpp tuner_cache_test.cpp)
  foreach(_kind asan tsan)
    set(_san_${_kind}_sources "")
    foreach(_n IN LISTS _san_${_kind}_names)
      if(EXISTS "${_san_dir}/${_n}")
        list(APPEND _san_${_kind}_sources "${_san_dir}/${_n}")
      endif()
    endforeach()
  endforeach()

  # UBSan without its per-access checks (null, alignment, vptr, pointer-overflow) and ASan without
  # use-after-scope: at -O0 those instrument every member access and stack object, and the ASan host tests
  # then took 41 s of CPU per unity group instead of 19 (2-core machine, session 8), which pushed the test
  # build past 10 minutes. What stays: ASan (heap/stack/global overflows, use-after-free/-return, leaks),
  # UBSan's arithmetic checks (signed overflow, shifts, division, float-cast overflow, bounds, bool/enum
  # loads, missing returns). A null dereference still stops the test (SIGSEGV with ASan's report).
  set(KTUNE_ASAN_FLAGS -fsanitize=address,undefined,float-cast-overflow
      -fno-sanitize=null,alignment,vptr,pointer-overflow -fno-sanitize-address-use-after-scope
      -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS)
  set(KTUNE_TSAN_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  # Report and stop at the first finding; CUDA's runtime needs the shadow gap unprotected on a GPU host.
  set(KTUNE_ASAN_ENV
      "ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:protect_shadow_gap=0"
      "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
  set(KTUNE_TSAN_ENV "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")

  # Sanitized binaries: -g1 and, whatever the build type, -O0 for ASan (a host-test TU with ASan takes
  # 24 s of CPU at -O0 and 58 s at -O1 on the 2-core machine; the tests run in seconds either way) and
  # -O1 for TSan (only 3 TUs; its concurrency tests are slow unoptimised).
  function(ktune_sanitized_target target kind)
    set(_flags ${KTUNE_${kind}_FLAGS})
    # The host tests' unity groups (CMakeLists.txt) apply here too.
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
    if(kind STREQUAL "TSAN")
      target_compile_options(${target} PRIVATE ${_flags} -O1 -g1)
    else()
      target_compile_options(${target} PRIVATE ${_flags} -O0 -g1)
    endif()
    target_link_options(${target} PRIVATE ${_flags})
    target_link_libraries(${target} PRIVATE ktune CUDA::cudart)
    target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/test" "${_san_dir}")
  endfunction()

  if(_san_asan_sources)
    add_executable(ktune_host_tests_asan ${_san_asan_sources})
    target_link_libraries(ktune_host_tests_asan PRIVATE doctest::doctest)
    ktune_sanitized_target(ktune_host_tests_asan ASAN)
    if(KTUNE_SANITIZE_TABLE_TESTS AND TARGET ktune_instances)
      # The instance objects, and what ktune_host_tests gets besides (tools/ includes, cuBLASLt/cuDNN flags).
      ktune_link_internal(ktune_host_tests_asan)
    endif()
    add_test(NAME ktune_host_tests_asan COMMAND ktune_host_tests_asan)
    set(_san_labels sanitize)
    if(KTUNE_SANITIZE_TABLE_TESTS AND TARGET ktune_instances)
      set(KTUNE_ASAN_HAS_EVERY_HOST_TEST TRUE)
      if(NOT KTUNE_PLAIN_HOST_TESTS)
        set(_san_labels "host;sanitize")  # the host tests' only build (CMakeLists.txt)
      endif()
    endif()
    set_tests_properties(ktune_host_tests_asan PROPERTIES LABELS "${_san_labels}" ENVIRONMENT "${KTUNE_ASAN_ENV}")
  endif()

  if(_san_tsan_sources)
    add_executable(ktune_host_tests_tsan ${_san_tsan_sources})
    target_link_libraries(ktune_host_tests_tsan PRIVATE doctest::doctest)
    ktune_sanitized_target(ktune_host_tests_tsan TSAN)
    add_test(NAME ktune_host_tests_tsan COMMAND ktune_host_tests_tsan)
    set_tests_properties(ktune_host_tests_tsan PROPERTIES LABELS sanitize ENVIRONMENT "${KTUNE_TSAN_ENV}")
  endif()

  # Fuzz targets replayed over their corpus (the libFuzzer build and timed runs: scripts/fuzz.sh).
  file(GLOB _fuzz_targets CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/test/fuzz/fuzz_*.cpp")
  if(_fuzz_targets)
    # replay_main.cpp (no ktune code) compiled once for all replays.
    add_library(ktune_fuzz_replay_main OBJECT "${PROJECT_SOURCE_DIR}/test/fuzz/replay_main.cpp")
    ktune_sanitized_target(ktune_fuzz_replay_main ASAN)
  endif()
  foreach(_src IN LISTS _fuzz_targets)
    get_filename_component(_name "${_src}" NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" _name "${_name}")
    add_executable(ktune_fuzz_${_name}_replay "${_src}" $<TARGET_OBJECTS:ktune_fuzz_replay_main>)
    ktune_sanitized_target(ktune_fuzz_${_name}_replay ASAN)
    add_test(NAME ktune_fuzz_${_name}_replay
             COMMAND ktune_fuzz_${_name}_replay "${PROJECT_SOURCE_DIR}/test/fuzz/corpus/${_name}")
    set_tests_properties(ktune_fuzz_${_name}_replay PROPERTIES LABELS "sanitize;fuzz" ENVIRONMENT "${KTUNE_ASAN_ENV}")
  endforeach()
endif()
