// tools/ktune-profile/run_common.hpp — what the GEMM run (run.cu) and the conv2d run (conv_run.cu) of
// ktune-profile share: the run's context (device, stream, timing, report) and the per-instance row
// printing. Host code (CUDA runtime and cuBLAS calls, no kernels).
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "../common/gpu_harness.cuh"
#include "profile.hpp"

namespace ktune::profile {

struct Context {
  explicit Context(const RunOptions& o) : opt(o) {}
  const RunOptions& opt;
  DeviceInfo dev;
  cudaStream_t stream = nullptr;
  tools::CublasRef cublas;
  tools::TimingOptions timing;
  RunReport report;
};

// Verify once (`check`: poison the output, one launch, its error against the reference into the stats),
// then time `launch` (tools::time_launches with cx.timing), also when the result was wrong; fills the
// row's check and time fields. Returns false when the CUDA context is lost (nothing more can run).
bool verify_and_time(Context& cx, const std::function<Status(tools::ErrorStats&)>& check, const tools::LaunchFn& launch,
                     double flops, double tol, ResultRow& row);

// A problem whose data could not be set up: its "(setup)" ERROR row in the report (and whether the
// context survived); returns the note for its summary.
inline std::string record_setup_failure(Context& cx, const std::string& op, const std::string& problem, const Status& st) {
  ResultRow r;
  r.op = op;
  r.problem = problem;
  r.instance = "(setup)";
  r.status = "ERROR";
  r.message = st.to_string();
  cx.report.rows.push_back(r);
  if (!tools::cuda_context_alive()) cx.report.context_lost = true;
  return "could not set up the problem: " + st.to_string();
}

// Count a problem's instance rows into its summary (GEMM's ProblemSummary or ConvSummary): passed,
// failed, the heuristic pick's TF/s and the best verified row. Returns the best row or nullptr.
template <class Summary>
const ResultRow* tally_rows(const std::vector<ResultRow>& rows, Summary& sum) {
  const ResultRow* best = nullptr;
  for (const ResultRow& r : rows) {
    if (r.status == "PASS") ++sum.passed;
    else ++sum.failed;
    if (r.status == "PASS" && r.ms > 0 && (best == nullptr || r.ms < best->ms)) best = &r;
    if (r.heuristic_pick && r.ms > 0) sum.heuristic_tflops = r.tflops;
  }
  if (best != nullptr) {
    sum.best_instance = best->instance;
    sum.best_ms = best->ms;
    sum.best_tflops = best->tflops;
  }
  return best;
}

// The per-instance table: header (with the reference's name) and one row.
void print_row_header(const std::string& ref);
void print_row(const ResultRow& r);

// conv_run.cu: every conv problem of cx.opt (after the GEMM problems), rows and summaries into
// cx.report; and the conv summary table.
void run_conv_problems(Context& cx);
void print_conv_summary(const RunReport& rep);

}  // namespace ktune::profile
