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
// size rule. Host code only (no kernels or CUDA calls), so host tests check the rule.
//
// Per launch, GemmLaunchOptions::pdl (a PdlChoice) overrides the rule: `on` / `off` launch
// programmatically / plainly whatever the switch and the size (the tactic suffixes @pdl / @nopdl,
// gemm/tactics.hpp), `rule` (the default) is the switch and the size rule above. pdl_launch() is the
// decision both launchers share; they add what only they know (the sm80 kernel's image must be sm_90+).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdlib>

#include "ktune/problem.hpp"

namespace ktune {

// Whether one launch is programmatic (GemmLaunchOptions::pdl): by the rule (the env switch, then the
// size), or forced on or off. `on` is honoured only where the launcher can launch programmatically
// (compute capability ≥ 9.0 and, for the sm80 kernel, its sm_90 image); elsewhere the launch is plain.
enum class PdlChoice { rule, on, off };

}  // namespace ktune

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

// Does a launch with choice `c` go programmatically, `env` being its kernel kind's switch (sm90_pdl_mode()
// or sm80_pdl_mode())? rule → pdl_wanted(env, d); on → yes; off → no. (Before the launcher's own
// capability check: the sm80 launcher also needs the kernel's sm_90 image.)
inline bool pdl_launch(PdlChoice c, PdlMode env, const GemmDesc& d) {
  switch (c) {
    case PdlChoice::on: return true;
    case PdlChoice::off: return false;
    default: return pdl_wanted(env, d);
  }
}

// The tuner's PDL twin of a tactic (gemm/tactics.hpp launch_variants): the choice opposite to what `rule`
// gives for d, or PdlChoice::rule for none. Only under the size rule (env small_only: with KTUNE_SM90_PDL /
// KTUNE_SM80_PDL set, the switch decides every tuned launch, so the A/B switch still compares all-PDL
// with no-PDL), and only for M·N·K ≤ pdl_twin_max_mnk: PDL hides about a microsecond of launch and prologue
// per launch (H200: 1024³ sm90 7.22 → 6.42 µs, 256³ 3.77 → 2.91), under 1% of a GEMM of 2^35 (≳ 100 µs
// even on the sm90 kernel), within the timer's noise, so longer problems are not worth the extra timing.
inline constexpr double pdl_twin_max_mnk = 34359738368.0;  // 2^35
inline PdlChoice pdl_twin(PdlMode env, const GemmDesc& d) {
  if (env != PdlMode::small_only) return PdlChoice::rule;
  if (static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k) > pdl_twin_max_mnk) return PdlChoice::rule;
  return pdl_wanted(env, d) ? PdlChoice::off : PdlChoice::on;
}

// The launch attribute that makes a cudaLaunchKernelEx launch programmatic.
inline cudaLaunchAttribute pdl_attribute() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
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
