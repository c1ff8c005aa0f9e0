// tools/ktune-profile/output.cu — the results table as CSV (one row per instance and problem, plus
// one row per problem for cuBLAS) or JSON (device, build, rows and per-problem summaries).
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
  f << "problem,precision,layout,m,n,k,epilogue,instance,family,heuristic_pick,ms,tflops,rel_err,tolerance,status,"
       "cublas_ms,cublas_tflops,speedup_vs_cublas,iters,repeats,message\n";
  for (const ResultRow& row : r.rows) {
    const tools::ProblemSpec* spec = nullptr;
    for (const auto& p : r.problems)
      if (p.spec.name() == row.problem) spec = &p.spec;
    f << csv_field(row.problem) << ',';
    if (spec != nullptr)
      f << to_string(spec->precision) << ',' << spec->layout_name() << ',' << spec->m << ',' << spec->n << ',' << spec->k << ','
        << spec->epilogue_name() << ',';
    else
      f << ",,,,,,";
    f << csv_field(row.instance) << ',' << row.family << ',' << (row.heuristic_pick ? 1 : 0) << ',' << opt_num(row.ms) << ','
      << (row.ms >= 0 ? num(row.tflops) : "") << ',' << opt_num(row.rel_err) << ',' << num(row.tol) << ',' << row.status
      << ',' << opt_num(row.cublas_ms) << ',' << (row.cublas_ms >= 0 ? num(row.cublas_tflops) : "") << ','
      << (row.ms > 0 && row.cublas_ms > 0 ? num(row.cublas_ms / row.ms) : "") << ',' << row.iters << ',' << row.repeats << ','
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
    << ",\n  \"cublaslt\": " << json_str(r.cublaslt) << ",\n  \"commit\": " << json_str(r.commit)
    << ",\n  \"context_lost\": " << (r.context_lost ? "true" : "false") << ",\n";
  f << "  \"problems\": [\n";
  for (std::size_t i = 0; i < r.problems.size(); ++i) {
    const ProblemSummary& s = r.problems[i];
    f << "    {\"problem\": " << json_str(s.spec.name()) << ", \"precision\": " << json_str(std::string(to_string(s.spec.precision)))
      << ", \"layout\": " << json_str(s.spec.layout_name()) << ", \"m\": " << s.spec.m << ", \"n\": " << s.spec.n
      << ", \"k\": " << s.spec.k << ", \"epilogue\": " << json_str(s.spec.epilogue_name())
      << ", \"cublas_api\": " << json_str(s.cublas_api) << ", \"cublas_ms\": " << opt_json(s.cublas_ms)
      << ", \"cublas_tflops\": " << (s.cublas_ms >= 0 ? num(s.cublas_tflops) : "null")
      << ", \"cublas_rel_err_vs_fp64acc\": " << opt_json(s.cublas_ref_err) << ", \"cublas_check\": " << json_str(s.cublas_status)
      << ", \"best_instance\": " << json_str(s.best_instance) << ", \"best_ms\": " << opt_json(s.best_ms)
      << ", \"best_tflops\": " << (s.best_ms >= 0 ? num(s.best_tflops) : "null")
      << ", \"speedup_vs_cublas\": " << (s.best_ms > 0 && s.cublas_ms > 0 ? num(s.cublas_ms / s.best_ms) : "null")
      << ", \"heuristic_instance\": " << json_str(s.heuristic_instance)
      << ", \"heuristic_tflops\": " << (s.heuristic_tflops > 0 ? num(s.heuristic_tflops) : "null")
      << ", \"candidates\": " << s.candidates << ", \"passed\": " << s.passed << ", \"failed\": " << s.failed
      << ", \"buffer_sets\": " << s.sets << ", \"note\": " << json_str(s.note) << "}"
      << (i + 1 < r.problems.size() ? ",\n" : "\n");
  }
  f << "  ],\n  \"rows\": [\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const ResultRow& row = r.rows[i];
    f << "    {\"problem\": " << json_str(row.problem) << ", \"instance\": " << json_str(row.instance)
      << ", \"family\": " << json_str(row.family) << ", \"heuristic_pick\": " << (row.heuristic_pick ? "true" : "false")
      << ", \"ms\": " << opt_json(row.ms) << ", \"tflops\": " << (row.ms >= 0 ? num(row.tflops) : "null")
      << ", \"rel_err\": " << opt_json(row.rel_err) << ", \"tolerance\": " << num(row.tol)
      << ", \"status\": " << json_str(row.status) << ", \"cublas_ms\": " << opt_json(row.cublas_ms)
      << ", \"speedup_vs_cublas\": " << (row.ms > 0 && row.cublas_ms > 0 ? num(row.cublas_ms / row.ms) : "null")
      << ", \"iters\": " << row.iters << ", \"repeats\": " << row.repeats << ", \"message\": " << json_str(row.message) << "}"
      << (i + 1 < r.rows.size() ? ",\n" : "\n");
  }
  f << "  ]\n}\n";
  std::printf("wrote %s\n", path.c_str());
  return static_cast<bool>(f);
}

}  // namespace ktune::profile
