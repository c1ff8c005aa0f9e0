// ktune/tuner/conv_backend.hpp — what the tuner needs from the machine to tune conv2d keys, as an
// interface (like tuner/backend.hpp for GEMM), so the conv tuning logic is tested on a host without a
// GPU. The device queries (current device, device facts, capture state) stay with the GEMM backend;
// this one only opens measuring sessions. The CUDA implementation is tuner/conv_cuda_backend.hpp.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "ktune/conv/dispatch.hpp"
#include "ktune/conv/problem.hpp"
#include "ktune/conv/tactics.hpp"
#include "ktune/status.hpp"
#include "ktune/tuner/backend.hpp"

namespace ktune::tuner {

// Scratch buffers (x, w, bias, residual, y: never the caller's) and a reference output for one conv
// problem; lives while one key is tuned.
class ConvTuningSession {
 public:
  virtual ~ConvTuningSession() = default;
  // Run the tactic once on the scratch buffers and compare its output with the reference.
  virtual Validation validate(const ConvTactic& t) = 0;
  // Time the tactic: median of adaptive repeats (see next_step in timing.hpp), or exactly
  // r.exact_repeats repeats (the tuner's interleaved final round; see MeasureRequest).
  virtual Measurement measure(const ConvTactic& t, const MeasureRequest& r) = 0;
  virtual std::size_t scratch_bytes() const { return 0; }
  virtual std::string describe() const { return {}; }
};

class ConvTuningBackend {
 public:
  virtual ~ConvTuningBackend() = default;
  // Prepare to tune `desc` with alignment class `al` on `device`. `candidates` are the instances that
  // can run it, best-ranked first; the session picks its reference among them.
  virtual Status begin(int device, const Conv2dDesc& desc, const ConvAlignment& al,
                       std::span<const ConvKernelEntry* const> candidates, std::unique_ptr<ConvTuningSession>& out) = 0;
  virtual void release_scratch() {}
};

}  // namespace ktune::tuner
