// tools/ktune-profile/main.cu — ktune's main job: list the kernel families (no GPU needed), or run,
// verify and time every valid instance on built-in or given GEMM problems against cuBLASLt.
//
//   ktune-profile --list                      families, valid instances, pruned configs with reasons
//   ktune-profile                             the built-in default problems on the local GPU
//   ktune-profile --gemm 4096x4096x4096 --dtype bf16 --layout tn --csv out.csv
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../common/problem_spec.hpp"
#include "ktune/device.hpp"
#include "profile.hpp"

namespace {

using ktune::tools::Precision;
using ktune::tools::ProblemSpec;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: ktune-profile [options]\n"
               "\n"
               "With no options: run, verify (against cuBLASLt) and time every valid kernel instance on the\n"
               "built-in default problems on the local GPU, and print the comparison table.\n"
               "\n"
               "  --list                 list the kernel families: parameter lists, valid instances (smem,\n"
               "                         threads, estimated registers) and pruned configs with the reason\n"
               "                         (works without a GPU)\n"
               "  --gemm MxNxK           run this one problem instead of the defaults\n"
               "  --dtype f16|bf16|f32|tf32\n"
               "                         precision of --gemm (default bf16); without --gemm, run only the\n"
               "                         default problems of this precision\n"
               "  --layout tn|nn|nt|tt   A and B layouts, 't' = row-major, 'n' = column-major (default tn);\n"
               "                         without --gemm, run only the default problems with these layouts\n"
               "  --epilogue identity|bias_relu\n"
               "                         epilogue of --gemm (default identity)\n"
               "  --filter TEXT          only instances whose name contains TEXT (also applies to --list)\n"
               "  --iters N              launches per timed repeat (default: enough for ~20 ms, ~5 with --quick)\n"
               "  --repeats N            timed repeats; the median is reported (default 9, 5 with --quick)\n"
               "  --quick                a subset of the problems and shorter timing (scripts/gpu-check.sh)\n"
               "  --no-ref-check         do not check cuBLAS against the float64-accumulating reference GEMM\n"
               "  --csv FILE             write the results table as CSV\n"
               "  --json FILE            write the results (device, commit, rows, per-problem summary) as JSON\n"
               "  --device N             CUDA device ordinal (default: the current device)\n"
               "  -h, --help             this text\n"
               "\n"
               "Exit status: 0 when every instance passed, 1 when any failed or no GPU was found, 2 on a usage error.\n");
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ktune-profile: %s\n(see ktune-profile --help)\n", msg.c_str());
  return 2;
}

bool parse_int(std::string_view s, int lo, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo) return false;
  out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool list = false, quick = false, no_ref_check = false;
  std::optional<std::string> gemm, dtype, layout, epilogue;
  std::string filter, csv, json;
  int iters = 0, repeats = 0, device = -1;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto value = [&](std::string& out) {
      if (inline_value) {
        out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    auto flag = [&]() { return !inline_value.has_value(); };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (arg == "--list" && flag()) {
      list = true;
    } else if (arg == "--quick" && flag()) {
      quick = true;
    } else if (arg == "--no-ref-check" && flag()) {
      no_ref_check = true;
    } else if (arg == "--gemm" || arg == "--dtype" || arg == "--layout" || arg == "--epilogue" || arg == "--filter" ||
               arg == "--csv" || arg == "--json" || arg == "--iters" || arg == "--repeats" || arg == "--device") {
      if (!value(v)) return usage_error(arg + " needs a value");
      if (arg == "--gemm") gemm = v;
      else if (arg == "--dtype") dtype = v;
      else if (arg == "--layout") layout = v;
      else if (arg == "--epilogue") epilogue = v;
      else if (arg == "--filter") filter = v;
      else if (arg == "--csv") csv = v;
      else if (arg == "--json") json = v;
      else if (arg == "--iters" && !parse_int(v, 1, iters)) return usage_error("--iters needs a positive integer, got '" + v + "'");
      else if (arg == "--repeats" && !parse_int(v, 1, repeats))
        return usage_error("--repeats needs a positive integer, got '" + v + "'");
      else if (arg == "--device" && !parse_int(v, 0, device))
        return usage_error("--device needs a device ordinal, got '" + v + "'");
    } else {
      return usage_error("unknown argument '" + std::string(argv[i]) + "'");
    }
  }

  if (list) return ktune::profile::list_families(filter);

  // Problems: one from --gemm, or the defaults (narrowed by --dtype / --layout).
  std::optional<Precision> precision;
  if (dtype) {
    precision = ktune::tools::parse_precision(*dtype);
    if (!precision) return usage_error("unknown --dtype '" + *dtype + "' (f16, bf16, f32, tf32)");
  }
  ktune::Layout la = ktune::Layout::row, lb = ktune::Layout::col;
  if (layout && !ktune::tools::parse_layouts(*layout, la, lb))
    return usage_error("unknown --layout '" + *layout + "' (tn, nn, nt, tt)");
  bool bias_relu = false;
  if (epilogue) {
    if (*epilogue == "bias_relu") bias_relu = true;
    else if (*epilogue != "identity") return usage_error("unknown --epilogue '" + *epilogue + "' (identity, bias_relu)");
  }

  ktune::profile::RunOptions opt;
  if (gemm) {
    ProblemSpec p;
    if (!ktune::tools::parse_mnk(*gemm, p.m, p.n, p.k)) return usage_error("--gemm needs MxNxK, got '" + *gemm + "'");
    p.precision = precision.value_or(Precision::bf16);
    p.a_layout = la;
    p.b_layout = lb;
    p.bias_relu = bias_relu;
    opt.problems.push_back(p);
  } else {
    if (epilogue) return usage_error("--epilogue applies to --gemm");
    for (const ProblemSpec& p : ktune::tools::default_problems(quick)) {
      if (precision && p.precision != *precision) continue;
      if (layout && (p.a_layout != la || p.b_layout != lb)) continue;
      opt.problems.push_back(p);
    }
    if (opt.problems.empty()) return usage_error("no default problem matches --dtype/--layout; use --gemm MxNxK");
  }
  opt.filter = filter;
  opt.quick = quick;
  opt.iters = iters;
  opt.repeats = repeats > 0 ? repeats : (quick ? 5 : 9);
  opt.target_ms = quick ? 5.0 : 20.0;
  opt.check_reference = !no_ref_check;
  opt.device = device;
  opt.csv_path = csv;
  opt.json_path = json;

  if (ktune::cuda_device_count() == 0) {
    std::fprintf(stderr, "ktune-profile: no CUDA device found (use --list to see the kernel families)\n");
    return 1;
  }
  return ktune::profile::run_problems(opt);
}
