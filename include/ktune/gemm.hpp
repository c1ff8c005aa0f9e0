// ktune/gemm.hpp — the one-call GEMM API (host code; compiles with any C++20 compiler).
//
//   ktune::GemmDesc desc{.m = M, .n = N, .k = K, .ab_type = ktune::DType::bf16, ...};
//   ktune::Status s = ktune::gemm(desc, {.a = A, .b = B, .d = D}, stream);
//
// The kernels come from the dispatch table, which the program fills by compiling instance
// registrations in its CUDA translation units (ktune/gemm/instances/all.cuh, or
// KTUNE_REGISTER_GEMM_FAMILY_PART from ktune/gemm/instantiate.cuh).
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "ktune/device.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/heuristic.hpp"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"
#include "ktune/problem.hpp"
#include "ktune/tuner/default.hpp"
#include "ktune/workspace.hpp"

namespace ktune {

struct GemmOptions {
  const char* instance = nullptr;  // run this instance by name instead of choosing one
  bool heuristic = false;          // choose by the cost model instead of the tuner (no benchmarking)
  GemmLaunchOptions launch{};
};

// All checks that decide between an error and a launch; `out` is the chosen entry.
inline Status select_gemm(const GemmDesc& desc, const GemmOperands& ops, const GemmTable& table, const DeviceInfo& dev,
                          const GemmOptions& opt, const GemmKernelEntry*& out) {
  out = nullptr;
  KTUNE_RETURN_IF_ERROR(validate(desc, ops));
  if (table.size() == 0)
    return error(StatusCode::no_instance,
                 "the GEMM dispatch table is empty: compile ktune/gemm/instances/all.cuh (or "
                 "KTUNE_REGISTER_GEMM_FAMILY_PART registrations) into your program");
  const GemmDesc d = resolved(desc);
  const GemmAlignment al = alignment_of(d, ops);
  if (opt.instance != nullptr) {
    const GemmKernelEntry* e = table.find(opt.instance);
    if (e == nullptr) return error(StatusCode::no_instance, std::string("no instance named ") + opt.instance);
    KTUNE_RETURN_IF_ERROR(can_implement(*e, d, al, &dev));
    out = e;
    return {};
  }
  std::vector<std::string> why;
  const auto cands = table.candidates(d, al, &dev, &why);
  if (cands.empty()) {
    // Say the most specific reason. Without the device, can the math and layout be served at all?
    // If the alignment is what no instance accepts, say that; otherwise the device is the reason.
    bool math_layout_exists = false, aligned_exists = false;
    for (const auto& e : table.entries()) {
      const Status s = can_implement(e, d, al, nullptr);
      math_layout_exists |= s.ok() || s.code() == StatusCode::misaligned;
      aligned_exists |= s.ok();
    }
    if (!math_layout_exists)
      return error(StatusCode::unsupported, "no instance computes " + std::string(to_string(required_math(d))) +
                                                " with layout " + layout_letter(d.a_layout) + layout_letter(d.b_layout));
    if (!aligned_exists)
      return error(StatusCode::misaligned, "no instance accepts this problem's alignment (A allows " + std::to_string(al.a) +
                                               "-element vectors, B " + std::to_string(al.b) + ")");
    return error(StatusCode::no_instance, "no instance for this problem runs on " + dev.name + " (sm" +
                                              std::to_string(dev.cc) + ", " + std::to_string(dev.smem_optin_bytes) +
                                              " B shared memory per block)");
  }
  double best = std::numeric_limits<double>::infinity();
  for (const GemmKernelEntry* e : cands) {
    const double cost = heuristic_cost(*e, d, dev);
    // Ties resolve by table order, which is fixed at compile time: the choice is deterministic.
    if (cost < best) {
      best = cost;
      out = e;
    }
  }
  return {};
}

// Workspace bytes that gemm(desc, ops, stream, opt) may need, for callers who pass their own
// (GemmOperands::workspace). With opt.instance: exactly that instance's need with opt.launch. Otherwise
// an upper bound over every registered instance whose math and layout fit the problem, with opt.launch
// and with each launch variant the tuner may time (launch_variants on the current device: split-K, stream-K).
inline std::size_t gemm_workspace_size(const GemmDesc& desc, const GemmOptions& opt = {}) {
  const GemmDesc d = resolved(desc);
  const GemmTable& table = gemm_table();
  if (opt.instance != nullptr) {
    const GemmKernelEntry* e = table.find(opt.instance);
    return e != nullptr ? workspace_bytes_for(*e, d, opt.launch) : 0;
  }
  DeviceInfo dev;
  const bool have_dev = cuda_device_count() > 0 && current_device(dev).ok();
  std::size_t most = 0;
  // Alignment only removes kernel instances; routes (gemm/route/) take only misaligned operands: ask both.
  const GemmAlignment widest{16, 16, 16}, narrowest{1, 1, 1};
  for (const GemmKernelEntry& e : table.entries()) {
    const DeviceInfo* dv = have_dev ? &dev : nullptr;
    if (e.workspace_size == nullptr || !(can_implement(e, d, widest, dv).ok() || can_implement(e, d, narrowest, dv).ok()))
      continue;
    most = std::max(most, workspace_bytes_for(e, d, opt.launch));
    if (have_dev)
      for (const GemmLaunchOptions& v : launch_variants(e, d, dev)) most = std::max(most, workspace_bytes_for(e, d, v));
  }
  return most;
}

namespace detail {
// Launch `e` with `launch`, giving it the workspace it needs: the caller's (checked: too small is an
// error and nothing is launched) or, when the caller passed none, one from the per-(device, stream)
// pool (ktune/workspace.hpp).
inline Status launch_with_workspace(const GemmKernelEntry& e, const GemmDesc& desc, const GemmOperands& ops,
                                    const GemmLaunchOptions& launch, cudaStream_t stream) {
  const GemmDesc d = resolved(desc);
  KTUNE_RETURN_IF_ERROR(check_launch_options(e, launch));
  GemmOperands o = ops;
  const std::size_t need = workspace_bytes_for(e, d, launch);
  if (need > 0 && o.workspace == nullptr) {
    if (o.workspace_bytes != 0) return error(StatusCode::invalid_argument, "workspace_bytes is set but workspace is null");
    KTUNE_RETURN_IF_ERROR(gemm_workspace_pool().acquire(stream, need, o.workspace, o.workspace_bytes));
  }
  KTUNE_RETURN_IF_ERROR(check_workspace(e, d, o, launch));
  return e.launch(d, o, launch, stream);
}
}  // namespace detail

// D = epilogue(A·B, C, bias, residual) on `stream`. Nothing is launched when the Status is not ok.
// The instance and its launch options (a tactic: split-K, cluster size, ...) are the tuner's pick for
// this problem on this GPU (benchmarked on first use, then a constant-time lookup; see
// ktune/tuner/default.hpp), unless `opt` names an instance or asks for the heuristic; launch options
// the caller sets in `opt.launch` replace the tactic's.
// Instances and launch options that need scratch get ops.workspace, or ktune's pooled workspace.
inline Status gemm(const GemmDesc& desc, const GemmOperands& ops, cudaStream_t stream = nullptr,
                   const GemmOptions& opt = {}) {
  KTUNE_RETURN_IF_ERROR(validate(desc, ops));
  KTUNE_RETURN_IF_ERROR(check_launch_option_ranges(opt.launch));  // before anything is tuned or launched
  static const bool have_device = cuda_device_count() > 0;
  if (!have_device) return error(StatusCode::no_device, "no CUDA device found");
  if (opt.instance == nullptr && !opt.heuristic) {
    const GemmTactic* t = nullptr;
    if (default_tuner().select(desc, ops, stream, t).ok() && t != nullptr) {
      // The tuner's tactic: its instance with its launch options, unless the caller set options.
      if (!is_default_launch(opt.launch)) return detail::launch_with_workspace(*t->entry, desc, ops, opt.launch, stream);
      // A workspace the caller passed that is too small for the tuner's launch options: the caller did
      // not ask for them, so the same instance runs with default options instead of failing.
      if (ops.workspace != nullptr && !is_default_launch(t->launch) &&
          ops.workspace_bytes < workspace_bytes_for(*t->entry, resolved(desc), t->launch))
        return detail::launch_with_workspace(*t->entry, desc, ops, GemmLaunchOptions{}, stream);
      const Status s = detail::launch_with_workspace(*t->entry, desc, ops, t->launch, stream);
      if (s.ok() || is_default_launch(t->launch) || ops.workspace != nullptr || !default_tuner().backend().is_capturing(stream))
        return s;
      // First use of a pinned split-K tactic while capturing: ktune's workspace cannot grow now
      // (cudaMalloc is not capturable). The same instance with default options needs none.
      return detail::launch_with_workspace(*t->entry, desc, ops, GemmLaunchOptions{}, stream);
    }
  }
  const GemmKernelEntry* e = nullptr;
  // Forced instance, heuristic choice, or the tuner found nothing: select_gemm says precisely why.
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  KTUNE_RETURN_IF_ERROR(select_gemm(desc, ops, gemm_table(), dev, opt, e));
  return detail::launch_with_workspace(*e, desc, ops, opt.launch, stream);
}

}  // namespace ktune
