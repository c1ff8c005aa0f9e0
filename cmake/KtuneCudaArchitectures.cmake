# KtuneCudaArchitectures.cmake — pick CUDA architectures for ktune's kernels.
#
#   ktune_detect_cuda_architectures(<out-var>)
#
# Sets <out-var> to a CMake CUDA_ARCHITECTURES list:
#   * a GPU is visible (`nvidia-smi --query-gpu=compute_cap` answers): that GPU's architecture(s),
#     as real (SASS-only) targets. Compute capability 9.0 becomes "90a-real" so Hopper builds get
#     the arch-specific target (nvcc: -gencode=arch=compute_90a,code=sm_90a), never plain sm_90.
#   * otherwise: "90a-real;80-real" (H100/H200 and A100; sm_80 SASS also runs on sm_86/sm_89).
#
# Usable before project() (it only runs nvidia-smi), so a top-level project can decide before CMake
# picks its own default. Set CMAKE_CUDA_ARCHITECTURES (or the CUDAARCHS environment variable) to
# override it entirely.
include_guard(GLOBAL)

function(ktune_detect_cuda_architectures out_var)
  set(archs "")
  find_program(KTUNE_NVIDIA_SMI nvidia-smi)
  mark_as_advanced(KTUNE_NVIDIA_SMI)
  if(KTUNE_NVIDIA_SMI)
    execute_process(
      COMMAND "${KTUNE_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
      RESULT_VARIABLE smi_rc
      OUTPUT_VARIABLE smi_out
      ERROR_QUIET
      TIMEOUT 20)
    if(smi_rc EQUAL 0)
      string(REPLACE "\n" ";" smi_lines "${smi_out}")
      foreach(line IN LISTS smi_lines)
        string(STRIP "${line}" line)
        if(line MATCHES "^([0-9]+)\\.([0-9]+)$")
          set(cc "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
          if(cc STREQUAL "90")
            set(arch "90a-real")
          else()
            set(arch "${cc}-real")
          endif()
          if(NOT arch IN_LIST archs)
            list(APPEND archs "${arch}")
          endif()
        endif()
      endforeach()
    endif()
  endif()
  if(archs)
    set(how "the visible GPU(s)")
  else()
    set(archs "90a-real;80-real")
    set(how "no GPU visible: default targets")
  endif()
  message(STATUS "ktune: CUDA architectures ${archs} (${how})")
  set(${out_var} "${archs}" PARENT_SCOPE)
endfunction()
