// ktune/tuner/backend.hpp — what the tuner needs from the machine, as an interface, so its logic
// (candidates, pruning, budgets, validation verdicts, tie-breaks, caching, concurrency, capture) is
// tested on a host without a GPU. The CUDA implementation is tuner/cuda_backend.hpp; the host tests
// implement it with scripted timings.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "ktune/arch.hpp"
#include "ktune/dispatch.hpp"
#include "ktune/gemm/tactics.hpp"
#include "ktune/problem.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner/timing.hpp"

namespace ktune::tuner {

// Largest relative Frobenius error ‖D − D_ref‖ / ‖D_ref‖ a candidate may show against the reference.
// The math sets the bar (f32 FFMA 1e-5, tf32 2e-3, f16/bf16 1e-2); a 16-bit output type widens it to
// that type's bar, since a one-ulp rounding difference is already ~1e-3 there.
struct Tolerances {
  double f32 = 1e-5, tf32 = 2e-3, f16 = 1e-2, bf16 = 1e-2;
  double for_problem(MathOp math, DType d_type) const {
    double t = math == MathOp::simt_f32 ? f32 : math == MathOp::mma_tf32 ? tf32 : math == MathOp::mma_f16 ? f16 : bf16;
    if (d_type == DType::f16) t = std::max(t, f16);
    if (d_type == DType::bf16) t = std::max(t, bf16);
    return t;
  }
};

struct MeasureRequest {
  RepeatPolicy repeats{};
  double budget_ms = 0;                                       // this candidate's share; ≤ 0: none
  double best_ms = std::numeric_limits<double>::infinity();  // best median so far
  double max_launch_ms = 1000;                                // one run slower than this: give up
  // > 0: exactly this many repeats in one batch, no adaptive stop (neither a stable spread, the slow cutoff
  // nor budget_ms ends it; a run over max_launch_ms still does), timed the way this session timed the
  // tactic's last adaptive measurement (same chain length, input rotation and L2 flush). The tuner's
  // final round calls it round-robin over its contenders (A B C A B C ...), so drift between separate
  // measurements affects them alike. A session that ignores it measures adaptively (correct, slower).
  int exact_repeats = 0;
};

struct Measurement {
  Status status;        // not ok: the candidate failed to launch or to run
  double ms = 0;        // median of the repeats
  int repeats = 0;
  double spread = 0;    // IQR / median
  RepeatDecision stop = RepeatDecision::stable;
  bool exceeded_bound = false;  // a run took longer than max_launch_ms (ms holds that run's time)
  int chain = 1;                // launches per repeat, back to back (ms is per launch)
};

struct Validation {
  Status status;          // not ok: the candidate (or the reference) could not run
  double rel_error = 0;   // relative Frobenius error against the reference output
};

// Scratch buffers and a reference output for one problem; lives while one key is tuned. A candidate
// is a tactic: an instance launched with its launch options; a tactic that needs a workspace gets
// one from the session's scratch (bounded; over the bound it fails to run, with the reason).
class TuningSession {
 public:
  virtual ~TuningSession() = default;
  // Run the candidate once on the scratch buffers and compare its output with the reference.
  virtual Validation validate(const GemmTactic& t) = 0;
  // Time the candidate: median of repeats, adaptive (see next_step in timing.hpp), or exactly
  // r.exact_repeats repeats with the method of its last adaptive measurement (the final round).
  virtual Measurement measure(const GemmTactic& t, const MeasureRequest& r) = 0;
  // Device memory the session used: operands, output, flush buffer and workspace (high-water mark).
  virtual std::size_t scratch_bytes() const { return 0; }
  // How it measures, for the log (input data, L2 policy, repeats, reference instance).
  virtual std::string describe() const { return {}; }
};

class TuningBackend {
 public:
  virtual ~TuningBackend() = default;
  // The device a call on this thread runs on. Called on every dispatch: must be cheap.
  virtual Status current_device(int& ordinal) = 0;
  virtual Status device_info(int ordinal, DeviceInfo& out) = 0;
  // Is the stream capturing a CUDA graph? (Then nothing may be benchmarked or synchronised.)
  virtual bool is_capturing(cudaStream_t stream) = 0;
  // Prepare to tune `desc` (resolved) with alignment class `al` on `device`. `candidates` are all the
  // instances that can run it, best-ranked first; the session picks its reference among them.
  virtual Status begin(int device, const GemmDesc& desc, const GemmAlignment& al,
                       std::span<const GemmKernelEntry* const> candidates, std::unique_ptr<TuningSession>& out) = 0;
  // Give pooled scratch memory back.
  virtual void release_scratch() {}
};

}  // namespace ktune::tuner
