// ktune/gemm/kernel/pdl.hpp — when ktune's GEMM launchers use programmatic dependent launch (PDL).
//
// A programmatic launch (cudaLaunchAttributeProgrammaticStreamSerialization, compute capability ≥ 9.0)
// lets a kernel start while the one before it in the stream runs its tail: each ktune GEMM kernel lets
// its dependents start early (cudaTriggerProgrammaticLaunchCompletion) and waits for the previous grid's
// completion and memory (cudaGridDependencySynchronize) before its first global access. That hides the
// launch, rasterization and prologue of back-to-back short GEMMs (H200, session 9, sm90 kernel, graph
// replay: 1024³ 7.22 → 6.42 µs, 256³ 3.77 → 2.91) and cost ~0.3-1.5% on long ones (4096×11008×4096
// 0.545 → 0.553 ms, 4096³ 0.205 → 0.206), so by default only GEMMs of M·N·K ≤ 2^33 (≲ 25 µs on the
// sm90 kernel) launch programmatically. A/B switch per kernel kind, read once from the environment:
// KTUNE_SM90_PDL (the sm90 wgmma GEMM/conv kernels, sm90/kernel.cuh) and KTUNE_SM80_PDL (the sm80
// mma.sync / SIMT GEMM kernel on sm90 devices, gemm_kernel.cuh): 0 never, 1 always, unset or empty the
// size rule. Host code only (no CUDA), so host tests check the rule.
#pragma once
#include <cstdlib>

#include "ktune/problem.hpp"

namespace ktune::kernel {

enum class PdlMode { off, on, small_only };

// The mode an environment value asks for: null or empty → small_only; else an integer ≠ 0 → on, 0 → off.
inline PdlMode pdl_mode_of(const char* value) {
  if (value == nullptr || *value == '\0') return PdlMode::small_only;
  return std::atoi(value) != 0 ? PdlMode::on : PdlMode::off;
}

inline constexpr double pdl_max_mnk = 8589934592.0;  // 2^33

// Does `mode` launch the GEMM d (resolved) programmatically?
inline bool pdl_wanted(PdlMode mode, const GemmDesc& d) {
  switch (mode) {
    case PdlMode::off: return false;
    case PdlMode::on: return true;
    default: return static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k) <= pdl_max_mnk;
  }
}

// The switches, each read once.
inline PdlMode sm90_pdl_mode() {
  static const PdlMode mode = pdl_mode_of(std::getenv("KTUNE_SM90_PDL"));
  return mode;
}
inline PdlMode sm80_pdl_mode() {
  static const PdlMode mode = pdl_mode_of(std::getenv("KTUNE_SM80_PDL"));
  return mode;
}

}  // namespace ktune::kernel
