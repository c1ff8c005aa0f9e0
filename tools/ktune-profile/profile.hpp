// tools/ktune-profile/profile.hpp — the pieces of ktune-profile: listing the families (no CUDA),
// running and verifying instances on the GPU, writing the results table, offline pre-tuning of a
// shapes file into a tuning cache (--tune) and explaining one problem's tuning (--explain).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../common/problem_spec.hpp"
#include "../common/shapes_file.hpp"

namespace ktune {
struct DeviceInfo;
}

namespace ktune::profile {

// printf-style formatting of one number (`f` takes one double), e.g. fmt("%.2f", x). (run.cu)
std::string fmt(const char* f, double v);

// Select GPU `device` (−1: keep the current one) and describe it in `dev`. On failure prints why to stderr
// (`no_gpu_message` when there is no GPU at all) and returns false.
bool open_device(int device, DeviceInfo& dev, const char* no_gpu_message);

// `--list`: every default family with its parameter lists, valid instances and pruned configs.
// Pure host code: never calls the CUDA runtime. Returns the process exit code.
int list_families(const std::string& filter, const std::string& op);  // op: "", "gemm" or "conv"

struct RunOptions {
  std::vector<tools::ProblemSpec> problems;
  std::vector<Conv2dDesc> conv_problems;  // run after the GEMM problems (conv_run.cu)
  std::string filter;       // run only instances whose name contains this
  int iters = 0;            // launches per timed repeat; 0: chosen per instance from a time target
  int repeats = 9;          // timed repeats (median reported)
  double target_ms = 20.0;  // time per repeat when iters == 0
  bool quick = false;
  bool check_reference = true;  // verify cuBLAS against a float64-accumulating GEMM too
  int paired_rounds = 9;        // alternating best-instance/cuBLAS rounds per GEMM problem (0: none)
  int device = -1;          // -1: the current device
  std::string csv_path, json_path;
  std::string cache_path;   // tuning cache of the tuned conv picks (default tuner; empty: KTUNE_CACHE, if set)
};

// One instance (or a reference, or conv2d's tuned pick) on one problem.
struct ResultRow {
  std::string op = "gemm";  // "gemm" or "conv2d"
  std::string problem;      // ProblemSpec::name() / tools::conv_problem_name()
  std::string instance;     // instance name; the reference's name; conv2d's tuned tactic
  std::string family;       // instance family; "cublas", "cudnn" (references); "tuned" (conv2d's own pick)
  bool heuristic_pick = false;
  double ms = -1.0, tflops = 0.0;     // < 0: not timed
  double rel_err = -1.0, tol = 0.0;   // < 0: not verified
  std::string status;       // PASS, FAIL, ERROR
  std::string message;      // why, for FAIL / ERROR
  // The problem's reference (GEMM: cuBLAS; conv2d: cuDNN fused, or unfused where there is no fused call)
  // and, for conv2d, the second one (cuDNN unfused: conv + bias + activation as separate calls).
  std::string reference;
  double ref_ms = -1.0, ref_tflops = 0.0;
  double ref2_ms = -1.0, ref2_tflops = 0.0;
  int iters = 0, repeats = 0;
};

// Besides the unpaired best, the rows worth pairing with cuBLAS: the instances are timed one after another on
// a power-capped GPU that runs hotter as the list goes on, so a runner-up a few percent behind the best
// (H200: ±4% between runs of identical kernels) may be the faster one in alternating rounds. Verified (PASS),
// timed rows other than `best` within paired_runner_up_margin of its time, fastest first, at most
// paired_runner_up_count of them.
inline constexpr double paired_runner_up_margin = 0.05;
inline constexpr std::size_t paired_runner_up_count = 2;
inline std::vector<const ResultRow*> paired_runner_ups(const std::vector<ResultRow>& rows, const ResultRow& best) {
  std::vector<const ResultRow*> out;
  if (best.ms <= 0) return out;
  for (const ResultRow& r : rows)
    if (&r != &best && r.status == "PASS" && r.ms > 0 && r.ms <= best.ms * (1.0 + paired_runner_up_margin)) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const ResultRow* a, const ResultRow* b) { return a->ms < b->ms; });
  if (out.size() > paired_runner_up_count) out.resize(paired_runner_up_count);
  return out;
}

struct ProblemSummary {
  tools::ProblemSpec spec;
  std::string cublas_api;   // cublasLt / cublasGemmEx / "" when it failed
  double cublas_ms = -1.0, cublas_tflops = 0.0;
  double cublas_ref_err = -1.0;  // cuBLAS vs the float64-accumulating GEMM
  std::string cublas_status;     // PASS / FAIL / ERROR / "unchecked"
  std::string cublas_message;
  std::string best_instance;
  double best_ms = -1.0, best_tflops = 0.0;
  std::string heuristic_instance;  // select_gemm's choice ("" if none)
  double heuristic_tflops = 0.0;   // 0 when the pick was not run (filtered out)
  // cuBLAS / ktune, median of alternating rounds (tools::time_paired), for the instance that did best paired
  // among the unpaired best and its close runners-up (paired_runner_ups, within paired_runner_up_margin)
  double paired_speedup = -1.0;
  std::string paired_instance;
  int paired_rounds = 0;
  int candidates = 0, passed = 0, failed = 0;
  int sets = 1;                    // rotating buffer sets
  std::string note;                // e.g. why nothing ran
};

// One conv2d problem: the cuDNN references, conv2d's tuned pick and the best instance.
struct ConvSummary {
  Conv2dDesc desc;
  std::string name;              // tools::conv_problem_name(desc)
  std::string reference;         // "cuDNN fused", "cuDNN unfused" or "float64 CPU" (what instances are checked against)
  std::string fused_label, unfused_label;  // the cuDNN calls
  double fused_ms = -1.0, fused_tflops = 0.0;
  double unfused_ms = -1.0, unfused_tflops = 0.0;
  double ref_cpu_err = -1.0;     // the reference output vs the float64 CPU reference (on ref_cpu_scope)
  std::string ref_cpu_scope;     // which output pixels the CPU reference covers
  std::string ref_status;        // PASS / FAIL / ERROR / "unchecked"
  std::string ref_message;
  std::string tuned_tactic, tuned_source;  // ktune::conv2d's own choice and where it came from (tuned, cache, ...)
  double tuned_ms = -1.0, tuned_tflops = 0.0, tuning_ms = -1.0;
  std::string tuned_status;      // PASS / FAIL / ERROR
  std::string best_instance;
  double best_ms = -1.0, best_tflops = 0.0;
  std::string heuristic_instance;
  double heuristic_tflops = 0.0;
  int candidates = 0, passed = 0, failed = 0;
  int sets = 1;
  std::string note;
};

struct RunReport {
  std::string device, fingerprint, driver, runtime, cublaslt, cudnn, commit;
  std::vector<ResultRow> rows;
  std::vector<ProblemSummary> problems;
  std::vector<ConvSummary> conv_problems;
  bool context_lost = false;
};

// Run every problem on the GPU (the caller has checked that a device exists). Returns the exit code:
// 0 when every instance passed, 1 when any failed or errored.
int run_problems(const RunOptions& opt);

// `--tune FILE --cache OUT`: tune every problem of the (parsed, non-empty) shapes file with the
// runtime tuner on the current device and merge the winners into the tuning cache OUT (saved
// atomically). Returns the exit code: 0 when every problem was tuned and the cache written, 1 otherwise
// (also when there is no CUDA device).
struct TuneOptions {
  std::string shapes_path;     // for messages
  std::string cache_path;
  int device = -1;             // -1: the current device
  int max_candidates = -1;     // < 0: the tuner's default (TunerOptions::max_candidates)
  bool skip_cached = false;    // keys the cache already has for this device and build are not re-tuned
};
int tune_shapes(const TuneOptions& opt, const tools::ShapesFile& shapes);

// `--explain PROBLEM`: the constraint model's pruned configs, the instances that cannot implement the
// problem and why, the cost model's ranking and, on a GPU, the tuner's measured tactic report.
// Without a GPU the first parts are shown for an assumed H200. Returns 0, or 1 when no instance can
// implement the problem or tuning failed.
struct ExplainOptions {
  tools::ShapeProblem problem;                  // a GEMM line, or
  std::optional<tools::ConvShapeProblem> conv;  // a conv line ("conv f16 32x56x56x64,64x3x3 bias_relu")
  int device = -1;
  int max_candidates = -1;
};
int explain_problem(const ExplainOptions& opt);

// `--tune-quality [FILE]`: per shape, the tactic the tuner picks with its default options against an
// exhaustive timing of every candidate tactic (same measuring backend); prints the ratio per shape and
// the fraction within 3%. Returns 0 when every shape was compared, 1 otherwise.
struct QualityOptions {
  int device = -1;
  int max_candidates = -1;  // < 0: the tuner's default
  bool quick = false;       // fewer shapes, fewer repeats in the exhaustive sweep
  bool verbose = false;     // print every tactic's exhaustive time
};
int tune_quality(const QualityOptions& opt, const std::vector<tools::ShapeProblem>& shapes);

// Output of the results table.
bool write_csv(const std::string& path, const RunReport& r);
bool write_json(const std::string& path, const RunReport& r);

}  // namespace ktune::profile
