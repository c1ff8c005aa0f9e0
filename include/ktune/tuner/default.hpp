// ktune/tuner/default.hpp — the process-wide tuner behind the one-call API, configured from the
// environment (KTUNE_CACHE, KTUNE_LOG, KTUNE_TUNING, KTUNE_M_BUCKETS; see options_from_env), with
// the CUDA measuring backends (GEMM and conv2d) and the global dispatch tables. ktune::gemm() and
// ktune::conv2d() both go through it (one cache file, one log).
//
//   const ktune::GemmKernelEntry* e = nullptr;
//   KTUNE_RETURN_IF_ERROR(ktune::default_tuner().select(desc, ops, stream, e));   // validated desc/ops
//   return e->launch(ktune::resolved(desc), ops, launch_options, stream);
//
// After capturing CUDA graphs, ktune::tune_pending() tunes the keys first met during capture.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ktune/dispatch.hpp"
#include "ktune/tuner/cuda_backend.hpp"
#include "ktune/tuner/conv_cuda_backend.hpp"
#include "ktune/tuner/tuner.hpp"

namespace ktune {

// Created on first use; never destroyed (so calls from other static destructors stay safe).
inline tuner::Tuner& default_tuner() {
  static tuner::Tuner* const t = [] {
    std::vector<std::string> warnings;
    tuner::TunerOptions o = tuner::options_from_env({}, &warnings);
    auto* x = new tuner::Tuner(std::make_shared<tuner::CudaBackend>(), &gemm_table(), std::move(o),
                               std::make_shared<tuner::CudaConvBackend>(), &conv_table());
    for (const auto& w : warnings) x->log_message(tuner::LogLevel::warn, w);
    return x;
  }();
  return *t;
}

// Tune the keys that were first used while their stream was capturing a graph.
inline Status tune_pending(std::size_t* tuned = nullptr) { return default_tuner().tune_pending(tuned); }

// Merge the tuning results into a cache file (default: KTUNE_CACHE) atomically.
inline Status save_tuning_cache(const std::string& path = {}) { return default_tuner().save_cache(path); }

// Merge a cache file (e.g. produced offline by ktune-profile --tune) into the default tuner.
inline Status load_tuning_cache(const std::string& path) { return default_tuner().load_cache(path); }

// Give the tuner's scratch memory back to the device(s).
inline void release_tuning_scratch() { default_tuner().release_scratch(); }

}  // namespace ktune
