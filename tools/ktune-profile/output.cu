// tools/ktune-profile/output.cu — the results table as CSV (one row per instance and problem, plus the
// reference rows: cuBLAS; cuDNN fused and unfused, and conv2d's tuned pick for conv problems) or JSON
// (device, build, rows and per-problem summaries). Every row and problem says its op: gemm or conv2d.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "profile.hpp"

namespace ktune::profile {
namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
// Measured-or-absent numbers: negative means "not measured".
std::string opt_num(double v) { return v < 0 ? "" : num(v); }
std::string opt_json(double v) { return v < 0 ? "null" : num(v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

bool write_csv(const std::string& path, const RunReport& r) {
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "ktune-profile: cannot write %s\n", path.c_str());
    return false;
  }
  // op tells GEMM rows (gemm) from conv rows (conv2d); a conv row's layout is "nhwc" and its m, n, k are
  // the implicit GEMM's (N·P·Q, K, R·S·C). reference is the row's problem's reference (cuBLAS; cuDNN
  // fused, or unfused where it has no fused call), ref2 the second one (cuDNN unfused; conv only).
  f << "op,problem,precision,layout,m,n,k,epilogue,instance,family,heuristic_pick,ms,tflops,rel_err,tolerance,status,"
       "reference,ref_ms,ref_tflops,speedup_vs_ref,ref2_ms,speedup_vs_ref2,iters,repeats,message\n";
  for (const ResultRow& row : r.rows) {
    f << row.op << ',' << csv_field(row.problem) << ',';
    const tools::ProblemSpec* spec = nullptr;
    const ConvSummary* conv = nullptr;
    if (row.op == "conv2d") {
      for (const auto& p : r.conv_problems)
        if (p.name == row.problem) conv = &p;
    } else {
      for (const auto& p : r.problems)
        if (p.spec.name() == row.problem) spec = &p.spec;
    }
    if (spec != nullptr) {
      f << to_string(spec->precision) << ',' << spec->layout_name() << ',' << spec->m << ',' << spec->n << ',' << spec->k << ','
        << spec->epilogue_name() << ',';
    } else if (conv != nullptr) {
      const ConvShape sh = conv_shape(conv->desc);
      f << to_string(conv->desc.type) << ",nhwc," << sh.m << ',' << conv->desc.k << ',' << sh.kgemm << ',' << conv->desc.epilogue.tag()
        << ',';
    } else {
      f << ",,,,,,";
    }
    f << csv_field(row.instance) << ',' << row.family << ',' << (row.heuristic_pick ? 1 : 0) << ',' << opt_num(row.ms) << ','
      << (row.ms >= 0 ? num(row.tflops) : "") << ',' << opt_num(row.rel_err) << ',' << num(row.tol) << ',' << row.status << ','
      << csv_field(row.reference) << ',' << opt_num(row.ref_ms) << ',' << (row.ref_ms >= 0 ? num(row.ref_tflops) : "") << ','
      << (row.ms > 0 && row.ref_ms > 0 ? num(row.ref_ms / row.ms) : "") << ',' << opt_num(row.ref2_ms) << ','
      << (row.ms > 0 && row.ref2_ms > 0 ? num(row.ref2_ms / row.ms) : "") << ',' << row.iters << ',' << row.repeats << ','
      << csv_field(row.message) << '\n';
  }
  std::printf("wrote %s\n", path.c_str());
  return static_cast<bool>(f);
}

bool write_json(const std::string& path, const RunReport& r) {
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "ktune-profile: cannot write %s\n", path.c_str());
    return false;
  }
  f << "{\n  \"tool\": \"ktune-profile\",\n";
  f << "  \"device\": " << json_str(r.device) << ",\n  \"fingerprint\": " << json_str(r.fingerprint)
    << ",\n  \"driver\": " << json_str(r.driver) << ",\n  \"cuda_runtime\": " << json_str(r.runtime)
    << ",\n  \"cublaslt\": " << json_str(r.cublaslt) << ",\n  \"cudnn\": " << json_str(r.cudnn)
    << ",\n  \"commit\": " << json_str(r.commit)
    << ",\n  \"context_lost\": " << (r.context_lost ? "true" : "false") << ",\n";
  f << "  \"problems\": [\n";
  for (std::size_t i = 0; i < r.problems.size(); ++i) {
    const ProblemSummary& s = r.problems[i];
    f << "    {\"op\": \"gemm\", \"problem\": " << json_str(s.spec.name()) << ", \"precision\": " << json_str(std::string(to_string(s.spec.precision)))
      << ", \"layout\": " << json_str(s.spec.layout_name()) << ", \"m\": " << s.spec.m << ", \"n\": " << s.spec.n
      << ", \"k\": " << s.spec.k << ", \"epilogue\": " << json_str(s.spec.epilogue_name())
      << ", \"cublas_api\": " << json_str(s.cublas_api) << ", \"cublas_ms\": " << opt_json(s.cublas_ms)
      << ", \"cublas_tflops\": " << (s.cublas_ms >= 0 ? num(s.cublas_tflops) : "null")
      << ", \"cublas_rel_err_vs_fp64acc\": " << opt_json(s.cublas_ref_err) << ", \"cublas_check\": " << json_str(s.cublas_status)
      << ", \"best_instance\": " << json_str(s.best_instance) << ", \"best_ms\": " << opt_json(s.best_ms)
      << ", \"best_tflops\": " << (s.best_ms >= 0 ? num(s.best_tflops) : "null")
      << ", \"speedup_vs_cublas\": " << (s.best_ms > 0 && s.cublas_ms > 0 ? num(s.cublas_ms / s.best_ms) : "null")
      << ", \"paired_speedup_vs_cublas\": " << (s.paired_speedup > 0 ? num(s.paired_speedup) : "null")
      << ", \"paired_instance\": " << json_str(s.paired_instance) << ", \"paired_rounds\": " << s.paired_rounds
      << ", \"heuristic_instance\": " << json_str(s.heuristic_instance)
      << ", \"heuristic_tflops\": " << (s.heuristic_tflops > 0 ? num(s.heuristic_tflops) : "null")
      << ", \"candidates\": " << s.candidates << ", \"passed\": " << s.passed << ", \"failed\": " << s.failed
      << ", \"buffer_sets\": " << s.sets << ", \"note\": " << json_str(s.note) << "}"
      << (i + 1 < r.problems.size() || !r.conv_problems.empty() ? ",\n" : "\n");
  }
  for (std::size_t i = 0; i < r.conv_problems.size(); ++i) {
    const ConvSummary& s = r.conv_problems[i];
    const Conv2dDesc& d = s.desc;
    const ConvShape sh = conv_shape(d);
    auto ratio = [](double ref, double ms) { return ref > 0 && ms > 0 ? num(ref / ms) : std::string("null"); };
    f << "    {\"op\": \"conv2d\", \"problem\": " << json_str(s.name) << ", \"precision\": " << json_str(std::string(to_string(d.type)))
      << ", \"out_type\": " << json_str(std::string(to_string(d.out_type))) << ", \"layout\": \"nhwc\", \"n\": " << d.n
      << ", \"h\": " << d.h << ", \"w\": " << d.w << ", \"c\": " << d.c << ", \"k\": " << d.k << ", \"r\": " << d.r
      << ", \"s\": " << d.s << ", \"pad\": [" << d.pad_h << ", " << d.pad_w << "], \"stride\": [" << d.stride_h << ", "
      << d.stride_w << "], \"dil\": [" << d.dil_h << ", " << d.dil_w << "], \"p\": " << sh.p << ", \"q\": " << sh.q
      << ", \"gemm_m\": " << sh.m << ", \"gemm_n\": " << d.k << ", \"gemm_k\": " << sh.kgemm
      << ", \"epilogue\": " << json_str(d.epilogue.tag()) << ", \"reference\": " << json_str(s.reference)
      << ", \"cudnn_fused\": " << json_str(s.fused_label) << ", \"cudnn_fused_ms\": " << opt_json(s.fused_ms)
      << ", \"cudnn_fused_tflops\": " << (s.fused_ms >= 0 ? num(s.fused_tflops) : "null")
      << ", \"cudnn_unfused\": " << json_str(s.unfused_label) << ", \"cudnn_unfused_ms\": " << opt_json(s.unfused_ms)
      << ", \"cudnn_unfused_tflops\": " << (s.unfused_ms >= 0 ? num(s.unfused_tflops) : "null")
      << ", \"ref_rel_err_vs_fp64_cpu\": " << opt_json(s.ref_cpu_err) << ", \"ref_cpu_scope\": " << json_str(s.ref_cpu_scope)
      << ", \"ref_check\": " << json_str(s.ref_status) << ", \"ref_message\": " << json_str(s.ref_message)
      << ", \"tuned_tactic\": " << json_str(s.tuned_tactic) << ", \"tuned_source\": " << json_str(s.tuned_source)
      << ", \"tuning_ms\": " << opt_json(s.tuning_ms) << ", \"tuned_ms\": " << opt_json(s.tuned_ms)
      << ", \"tuned_tflops\": " << (s.tuned_ms >= 0 ? num(s.tuned_tflops) : "null") << ", \"tuned_check\": " << json_str(s.tuned_status)
      << ", \"tuned_speedup_vs_cudnn_fused\": " << ratio(s.fused_ms, s.tuned_ms)
      << ", \"tuned_speedup_vs_cudnn_unfused\": " << ratio(s.unfused_ms, s.tuned_ms)
      << ", \"best_instance\": " << json_str(s.best_instance) << ", \"best_ms\": " << opt_json(s.best_ms)
      << ", \"best_tflops\": " << (s.best_ms >= 0 ? num(s.best_tflops) : "null")
      << ", \"best_speedup_vs_cudnn_fused\": " << ratio(s.fused_ms, s.best_ms)
      << ", \"heuristic_instance\": " << json_str(s.heuristic_instance)
      << ", \"heuristic_tflops\": " << (s.heuristic_tflops > 0 ? num(s.heuristic_tflops) : "null")
      << ", \"candidates\": " << s.candidates << ", \"passed\": " << s.passed << ", \"failed\": " << s.failed
      << ", \"buffer_sets\": " << s.sets << ", \"note\": " << json_str(s.note) << "}" << (i + 1 < r.conv_problems.size() ? ",\n" : "\n");
  }
  f << "  ],\n  \"rows\": [\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const ResultRow& row = r.rows[i];
    const bool gemm = row.op != "conv2d";
    f << "    {\"op\": " << json_str(row.op) << ", \"problem\": " << json_str(row.problem) << ", \"instance\": " << json_str(row.instance)
      << ", \"family\": " << json_str(row.family) << ", \"heuristic_pick\": " << (row.heuristic_pick ? "true" : "false")
      << ", \"ms\": " << opt_json(row.ms) << ", \"tflops\": " << (row.ms >= 0 ? num(row.tflops) : "null")
      << ", \"rel_err\": " << opt_json(row.rel_err) << ", \"tolerance\": " << num(row.tol)
      << ", \"status\": " << json_str(row.status) << ", \"reference\": " << json_str(row.reference)
      << ", \"ref_ms\": " << opt_json(row.ref_ms) << ", \"speedup_vs_ref\": " << (row.ms > 0 && row.ref_ms > 0 ? num(row.ref_ms / row.ms) : "null");
    if (gemm)
      f << ", \"cublas_ms\": " << opt_json(row.ref_ms)
        << ", \"speedup_vs_cublas\": " << (row.ms > 0 && row.ref_ms > 0 ? num(row.ref_ms / row.ms) : "null");
    else
      f << ", \"ref2_ms\": " << opt_json(row.ref2_ms)
        << ", \"speedup_vs_ref2\": " << (row.ms > 0 && row.ref2_ms > 0 ? num(row.ref2_ms / row.ms) : "null");
    f << ", \"iters\": " << row.iters << ", \"repeats\": " << row.repeats << ", \"message\": " << json_str(row.message) << "}"
      << (i + 1 < r.rows.size() ? ",\n" : "\n");
  }
  f << "  ]\n}\n";
  std::printf("wrote %s\n", path.c_str());
  return static_cast<bool>(f);
}

}  // namespace ktune::profile
