// ktune/conv.hpp — the one-call 2-D convolution API (forward propagation, implicit GEMM on the GEMM
// mainloop; host code, compiles with any C++20 compiler).
//
//   ktune::Conv2dDesc d{.n = 32, .h = 56, .w = 56, .c = 64, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
//   d.epilogue = ktune::bias_activation(ktune::Activation::relu);
//   ktune::Status st = ktune::conv2d(d, {.x = x, .w = w, .y = y, .bias = bias}, stream);
//
// x is NHWC, w is KRSC, y is NPQK (all packed); see ktune/conv/problem.hpp for the exact semantics.
// The kernels come from the conv dispatch table, which the program fills by compiling conv instance
// registrations into its CUDA translation units (ktune/conv/instances/all.cuh, or
// KTUNE_REGISTER_CONV_FAMILY_PART from ktune/conv/instantiate.cuh; src/instances/conv_*.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <limits>
#include <string>
#include <vector>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/problem.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/device.hpp"
#include "ktune/tuner/default.hpp"

namespace ktune {

struct ConvOptions {
  const char* instance = nullptr;  // run this instance by name instead of choosing one
  bool heuristic = false;          // choose by the heuristic (select_conv) instead of the tuner
  ConvLaunchOptions launch{};      // non-default options replace the tuned tactic's
};

// All checks that decide between an error and a launch; `out` is the chosen entry.
// hopper_routes = false leaves the sm90 routes (gemm1x1, tma_im2col) out of the automatic choice.
inline Status select_conv(const Conv2dDesc& desc, const Conv2dOperands& ops, const ConvTable& table,
                          const DeviceInfo& dev, const ConvOptions& opt, const ConvKernelEntry*& out,
                          bool hopper_routes = true) {
  out = nullptr;
  KTUNE_RETURN_IF_ERROR(validate(desc, ops));
  if (table.size() == 0)
    return error(StatusCode::no_instance,
                 "the conv dispatch table is empty: compile ktune/conv/instances/all.cuh (or "
                 "KTUNE_REGISTER_CONV_FAMILY_PART registrations) into your program");
  const ConvAlignment al = alignment_of(desc, ops);
  if (opt.instance != nullptr) {
    const ConvKernelEntry* e = table.find(opt.instance);
    if (e == nullptr) return error(StatusCode::no_instance, std::string("no conv instance named ") + opt.instance);
    KTUNE_RETURN_IF_ERROR(can_implement(*e, desc, al, &dev));
    out = e;
    return {};
  }
  const auto cands = table.candidates(desc, al, nullptr);
  if (cands.empty()) {
    // Say the most specific reason: an instance of the right math that was only misaligned.
    bool math_exists = false, misaligned = false;
    for (const auto& e : table.entries()) {
      if (e.config.gemm.math != required_math(desc)) continue;
      math_exists = true;
      misaligned |= can_implement(e, desc, al, nullptr).code() == StatusCode::misaligned;
    }
    if (!math_exists)
      return error(StatusCode::unsupported, "no conv instance computes " + std::string(to_string(required_math(desc))));
    return error(misaligned ? StatusCode::misaligned : StatusCode::unsupported,
                 "no conv instance accepts C=" + std::to_string(desc.c) + " with x allowing " + std::to_string(al.x) +
                     "-element vectors and w " + std::to_string(al.w));
  }
  std::vector<const ConvKernelEntry*> on_device;
  std::string device_reason;
  for (const ConvKernelEntry* e : cands) {
    if (!hopper_routes && is_sm90_iterator(e->config.iterator)) continue;
    Status s = can_implement(*e, desc, al, &dev);
    if (s.ok()) on_device.push_back(e);
    else if (device_reason.empty()) device_reason = std::string(e->name) + ": " + s.message();
  }
  if (on_device.empty()) return error(StatusCode::no_instance, "no conv instance runs on this device (" + device_reason + ")");
  // The fastest gather first (the Hopper routes where they apply), then the measured tile policy of
  // the mma.sync families, then a cost model (Hopper: sm90_conv_cost; mma.sync: the GEMM's); ties
  // resolve by name (deterministic). The tuner ranks its candidates in the same order
  // (conv/tactics.hpp: sort_conv_candidates), so this is its Heuristic policy's choice too.
  sort_conv_candidates(on_device, desc, dev);
  out = on_device.front();
  return {};
}

// y = epilogue(conv2d(x, w), y, bias, residual) on `stream`. Nothing is launched when the Status is not ok.
// The instance and its launch options are the tuner's pick for this problem on this GPU (benchmarked on
// first use on scratch tensors, then a constant-time lookup; see ktune/tuner/default.hpp; KTUNE_TUNING
// =heuristic or off gives the heuristic choice / cache entries only), unless `opt` names an instance
// or asks for the heuristic; non-default `opt.launch` replaces the tactic's launch options.
inline Status conv2d(const Conv2dDesc& desc, const Conv2dOperands& ops, cudaStream_t stream = nullptr,
                     const ConvOptions& opt = {}) {
  KTUNE_RETURN_IF_ERROR(validate(desc, ops));
  KTUNE_RETURN_IF_ERROR(check_conv_launch_options(opt.launch));  // before anything is tuned or launched
  // split_k > 1 only where the instance splits K (the Hopper routes: conv_supports_split_k): anything else refuses, launching nothing.
  auto launch = [&](const ConvKernelEntry& e, const ConvLaunchOptions& lo) -> Status {
    if (lo.split_k > 1 && !conv_supports_split_k(e.config))
      return error(StatusCode::unsupported, "conv instance " + std::string(e.name) + " does not split K (split_k > 1)");
    if (lo.multicast > conv_multicast_limit(e.config))
      return error(StatusCode::unsupported, "conv instance " + std::string(e.name) + " multicasts in clusters of up to " +
                                                std::to_string(conv_multicast_limit(e.config)) + " CTAs, got " + std::to_string(lo.multicast) +
                                                " (the Hopper routes but swap AB; more than 2 on tma_im2col only)");
    if (lo.persistent > 0 && !conv_supports_persistent(e.config))
      return error(StatusCode::unsupported, "conv instance " + std::string(e.name) +
                                                " does not run a persistent grid (persistent > 0: the mma.sync optimized 128-row tiles)");
    if (lo.cluster_k > conv_cluster_k_limit(e.config))
      return error(StatusCode::unsupported, "conv instance " + std::string(e.name) + " takes cluster_k up to " +
                                                std::to_string(conv_cluster_k_limit(e.config)) + ", got " + std::to_string(lo.cluster_k));
    return e.launch(desc, ops, lo, stream);
  };
  static const bool have_device = cuda_device_count() > 0;
  if (!have_device) return error(StatusCode::no_device, "no CUDA device found");
  if (opt.instance == nullptr && !opt.heuristic) {
    const ConvTactic* t = nullptr;
    if (default_tuner().select_conv(desc, ops, stream, t).ok() && t != nullptr) {
      const Status st = launch(*t->entry, is_default_launch(opt.launch) ? t->launch : opt.launch);
      // A Hopper route that this build has no sm_90a code for refuses to launch (no_instance, nothing
      // launched; tuning excludes it, but a heuristic or deferred choice may name it): the heuristic
      // choice among the mma.sync instances below.
      if (st.code() != StatusCode::no_instance || !is_sm90_iterator(t->entry->config.iterator)) return st;
    }
  }
  DeviceInfo dev;
  KTUNE_RETURN_IF_ERROR(current_device(dev));
  const ConvKernelEntry* e = nullptr;
  KTUNE_RETURN_IF_ERROR(select_conv(desc, ops, conv_table(), dev, opt, e));
  const Status st = launch(*e, opt.launch);
  // A program built without sm_90a code still lists the Hopper routes, whose launchers refuse to run
  // the trapping image (no_instance, nothing launched): take the best mma.sync instance instead.
  if (st.code() == StatusCode::no_instance && opt.instance == nullptr && is_sm90_iterator(e->config.iterator)) {
    KTUNE_RETURN_IF_ERROR(select_conv(desc, ops, conv_table(), dev, opt, e, false));
    return launch(*e, opt.launch);
  }
  return st;
}

}  // namespace ktune
