// tools/ktune-profile/main.cu — ktune's main job: list the kernel families (no GPU needed), run,
// verify and time every valid instance on built-in or given GEMM problems against cuBLASLt and conv2d
// problems against cuDNN, pre-tune a list of shapes into a tuning cache, or explain how one problem is tuned.
//
//   ktune-profile --list                      families, valid instances, pruned configs with reasons
//   ktune-profile                             the built-in default problems (GEMM, then conv2d) on the local GPU
//   ktune-profile --gemm 4096x4096x4096 --dtype bf16 --layout tn --csv out.csv
//   ktune-profile --conv 32x56x56x64,64x3x3 --dtype f16 --epilogue bias_relu
//   ktune-profile --tune shapes.txt --cache out.ktune      offline pre-tuning (format: --help)
//   ktune-profile --explain "bf16 tn 4096x4096x4096"       why each instance was pruned or lost (conv lines too)
//   ktune-profile --tune-quality [shapes.txt]              the tuner's pick vs an exhaustive sweep
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../common/problem_spec.hpp"
#include "../common/shapes_file.hpp"
#include "ktune/device.hpp"
#include "profile.hpp"
#include "quality_model.hpp"

namespace {

using ktune::tools::Precision;
using ktune::tools::ProblemSpec;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: ktune-profile [options]\n"
               "\n"
               "With no options: run, verify and time every valid kernel instance on the built-in default\n"
               "problems on the local GPU and print the comparison tables: GEMM against cuBLASLt, then three\n"
               "ResNet-50 conv2d layers (N = 32, f16, bias + ReLU: 56x56 256->64 1x1, 28x28 128->128 3x3 and the\n"
               "C = 4 7x7 stride-2 stem) against cuDNN, each with ktune::conv2d's tuned pick.\n"
               "\n"
               "  --list                 list the kernel families, GEMM then conv2d (--op gemm|conv: one kind):\n"
               "                         parameter lists, valid instances (smem, threads, estimated registers)\n"
               "                         and pruned configs with the reason (works without a GPU)\n"
               "  --gemm MxNxK           run this one GEMM problem instead of the defaults\n"
               "  --conv SPEC            run this one conv2d problem (fprop, NHWC x, KRSC w, NPQK y) instead of the\n"
               "                         defaults, against cuDNN (cudnnConvolutionBiasActivationForward as the\n"
               "                         reference, the unfused conv + bias + ReLU timed too; cuDNN's output checked\n"
               "                         against a float64 CPU reference on up to 3072 output pixels, all of them for\n"
               "                         small problems) with ktune::conv2d's tuned pick. SPEC:\n"
               "                           NxHxWxC,KxRxS[,stride=S][,pad=P][,dil=D]   (S, P, D: one value or HxW)\n"
               "                         e.g. 32x56x56x64,64x3x3 or 32x224x224x4,64x7x7,stride=2; defaults: stride 1,\n"
               "                         dilation 1, padding dil*floor(R/2) x dil*floor(S/2) ('same' for odd filters);\n"
               "                         or the shapes-file numbers \"N H W C K R S [stride [pad]]\". With --gemm: both\n"
               "  --dtype f16|bf16|f32|tf32\n"
               "                         precision of --gemm (default bf16) and --conv (f16 or bf16; default f16);\n"
               "                         without them, run only the default problems of this precision\n"
               "  --layout tn|nn|nt|tt   A and B layouts, 't' = row-major, 'n' = column-major (default tn);\n"
               "                         without --gemm, run only the default GEMM problems with these layouts\n"
               "  --epilogue identity|bias_relu\n"
               "                         epilogue of --gemm (default identity) and --conv (default bias_relu:\n"
               "                         y = relu(conv(x, w) + bias[k]), what cuDNN's fused call computes; identity:\n"
               "                         y = conv(x, w), referenced by cudnnConvolutionForward alone)\n"
               "  --op gemm|conv         without --gemm/--conv: run only the default problems of this kind (with\n"
               "                         --list: list only the families of this kind)\n"
               "  --filter TEXT          only instances whose name contains TEXT (also applies to --list)\n"
               "  --iters N              launches per timed repeat (default: enough for ~20 ms, ~5 with --quick;\n"
               "                         conv2d problems: at most ~10 ms)\n"
               "  --repeats N            timed repeats; the median is reported (default 9, 5 with --quick)\n"
               "  --quick                a subset of the problems and shorter timing (scripts/gpu-check.sh)\n"
               "  --no-ref-check         do not check cuBLAS against the float64-accumulating reference GEMM\n"
               "  --no-paired            skip the paired timing: the best GEMM instance (and up to two runners-up\n"
               "                         within 5%% of it) and cuBLAS replayed in\n"
               "                         alternation (--repeats rounds, median of the per-round ratios), which\n"
               "                         cancels the clock drift of a GPU at its power cap; each side's timed\n"
               "                         replay follows ~60 ms of its own untimed replays (the power cap's clock\n"
               "                         control lags: right after the other side, a kernel runs at its clock)\n"
               "  --csv FILE             write the results table as CSV (column op: gemm or conv2d)\n"
               "  --json FILE            write the results (device, commit, rows, per-problem summary) as JSON\n"
               "  --cache OUT            merge the tuned conv2d picks into the tuning cache OUT (default: the file\n"
               "                         KTUNE_CACHE names, if set; the picks come from ktune's default tuner, as in\n"
               "                         an application)\n"
               "  --device N             CUDA device ordinal (default: the current device)\n"
               "  -h, --help             this text\n"
               "\n"
               "Tuning (the runtime tuner of ktune::gemm and ktune::conv2d, see include/ktune/tuner/):\n"
               "  --tune FILE --cache OUT\n"
               "                         offline pre-tuning: tune every problem of the shapes FILE on the GPU\n"
               "                         and merge the winners into the tuning cache OUT (saved atomically after\n"
               "                         each key); a deployed application loads OUT (KTUNE_CACHE=OUT) and skips\n"
               "                         tuning on the same GPU model, driver and ktune build. An existing OUT\n"
               "                         is merged: other keys, devices and builds stay; a key tuned again keeps\n"
               "                         the faster entry\n"
               "  --skip-cached          with --tune: do not re-tune keys OUT already has for this device and build\n"
               "  --explain PROBLEM      one problem, written like a shapes-file line (e.g. \"bf16 tn 4096x4096x4096\"\n"
               "                         or \"conv f16 32x56x56x64,64x3x3 bias_relu\"):\n"
               "                         the family configs the constraint model pruned and why, the instances\n"
               "                         that cannot implement it and why, the cost model's ranking and, on a GPU,\n"
               "                         the tuner's measurements (time, TF/s, selected / slower / failed\n"
               "                         validation / pruned by model). Without a GPU: shown for an assumed H200\n"
               "                         (sm90, 132 SMs, 227 KB shared memory), without timings\n"
               "  --max-candidates N     with --tune/--explain/--tune-quality: measure the cost model's top N (0: all;\n"
               "                         default 32)\n"
               "  --tune-quality [FILE]  tuning quality: for every problem of the shapes FILE (default: a built-in\n"
               "                         sweep of ~20 shapes: squares, LLM prefill and decode, unaligned, small K),\n"
               "                         the tactic the tuner picks (default options: cost-model top-k) against an\n"
               "                         exhaustive timing of every candidate tactic (instances x launch options)\n"
               "                         with the same backend; prints the ratio per shape and the fraction within\n"
               "                         3%% (target: >= 90%%). With --quick: fewer shapes and repeats; --verbose:\n"
               "                         every tactic's time\n"
               "  --device N             also applies to --tune and --explain\n"
               "  KTUNE_LOG=info|verbose prints the tuner's log (verbose: every candidate of every key);\n"
               "  KTUNE_M_BUCKETS=pow2   keys M by its power-of-two bucket (the deployed application must match)\n"
               "\n"
               "Shapes file (--tune): one problem per line, '#' starts a comment, blank lines are skipped, a\n"
               "line with the same tuning key as an earlier one is tuned once; every bad line is reported:\n"
               "    <precision> <layout> <MxNxK> [epilogue] [out=TYPE] [align=A/B/D]            (GEMM)\n"
               "    conv <f16|bf16> <SPEC> [epilogue] [out=TYPE] [stride=S] [pad=P] [dil=D]     (conv2d)\n"
               "  precision  f16 | bf16 | f32 (exact fp32 on CUDA cores) | tf32 (fp32 operands, tf32 tensor cores)\n"
               "  layout     tn | nn | nt | tt: A's letter first, 't' = row-major, 'n' = column-major\n"
               "  MxNxK      sizes, each 1 .. 2^31-257\n"
               "  epilogue   identity (default), or [ab|alpha][_bias][_res][_relu|_gelu_tanh|_gelu_erf|_silu][_clamp]\n"
               "             in this order, e.g. bias_relu, ab (alpha*AB + beta*C), res_silu; alpha/beta/clamp values\n"
               "             do not change the tuning key\n"
               "  out=TYPE   f16 | bf16 | f32: type of C, D, bias and residual (default: the operand type)\n"
               "  align=A/B/D  vector widths (elements) A, B and the outputs allow; default: what packed leading\n"
               "             dimensions and cudaMalloc'd pointers give (the tuning key depends on it)\n"
               "  conv lines: SPEC as --conv (or its numbers N H W C K R S [stride [pad]]); the epilogue defaults to\n"
               "             identity as on GEMM lines, tags without ab/res; out=TYPE: type of y and the bias\n"
               "  example:\n"
               "    # LLM layer, prefill and decode\n"
               "    bf16 tn 4096x11008x4096 bias_relu\n"
               "    bf16 tn 16x4096x4096            # decode\n"
               "    f16 nn 4095x4097x4093\n"
               "    # ResNet-50 layers at batch 32\n"
               "    conv f16 32x56x56x64,64x3x3 bias_relu\n"
               "    conv f16 32x224x224x4,64x7x7,stride=2 bias_relu\n"
               "\n"
               "Exit status: 0 when every instance passed (--tune: every problem tuned and the cache written;\n"
               "--explain: explained), 1 when any failed, no instance can implement an --explain problem, or no GPU\n"
               "was found (--explain works without one), 2 on a usage error (also a bad shapes file or PROBLEM).\n");
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
  bool list = false, quick = false, no_ref_check = false, no_paired = false, skip_cached = false, verbose = false;
  std::optional<std::string> quality;  // --tune-quality: "" for the built-in sweep
  std::optional<std::string> gemm, conv, op, dtype, layout, epilogue, tune, cache, explain;
  std::string filter, csv, json;
  int iters = 0, repeats = 0, device = -1, max_candidates = -1;
  std::vector<std::string> given;  // the options given, for checking combinations

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
    if (arg.rfind("--", 0) == 0) given.push_back(arg);
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else if (arg == "--list" && flag()) {
      list = true;
    } else if (arg == "--quick" && flag()) {
      quick = true;
    } else if (arg == "--no-ref-check" && flag()) {
      no_ref_check = true;
    } else if (arg == "--no-paired" && flag()) {
      no_paired = true;
    } else if (arg == "--skip-cached" && flag()) {
      skip_cached = true;
    } else if (arg == "--verbose" && flag()) {
      verbose = true;
    } else if (arg == "--tune-quality") {
      // Optional value: --tune-quality=FILE, or a next argument that is not an option.
      if (inline_value) quality = *inline_value;
      else if (i + 1 < argc && std::string_view(argv[i + 1]).rfind("--", 0) != 0) quality = argv[++i];
      else quality = std::string();
    } else if (arg == "--gemm" || arg == "--conv" || arg == "--op" || arg == "--dtype" || arg == "--layout" || arg == "--epilogue" || arg == "--filter" ||
               arg == "--csv" || arg == "--json" || arg == "--iters" || arg == "--repeats" || arg == "--device" ||
               arg == "--tune" || arg == "--cache" || arg == "--explain" || arg == "--max-candidates") {
      if (!value(v)) return usage_error(arg + " needs a value");
      if ((arg == "--tune" || arg == "--cache" || arg == "--explain") && v.empty()) return usage_error(arg + " needs a non-empty value");
      if (arg == "--tune") tune = v;
      else if (arg == "--cache") cache = v;
      else if (arg == "--explain") explain = v;
      else if (arg == "--max-candidates" && !parse_int(v, 0, max_candidates))
        return usage_error("--max-candidates needs a count (0: all), got '" + v + "'");
      else if (arg == "--gemm") gemm = v;
      else if (arg == "--conv") conv = v;
      else if (arg == "--op") op = v;
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

  // Modes: --list, --tune, --explain, or running instances (the default). Options of another mode are
  // errors, not silently ignored.
  const int modes = int(list) + int(tune.has_value()) + int(explain.has_value()) + int(quality.has_value());
  if (modes > 1) return usage_error("--list, --tune, --explain and --tune-quality are separate modes: give one of them");
  auto only = [&](const char* mode, std::initializer_list<std::string_view> allowed) -> std::optional<std::string> {
    for (const std::string& g : given)
      if (std::find(allowed.begin(), allowed.end(), std::string_view(g)) == allowed.end())
        return std::string(g) + " does not apply to " + mode;
    return std::nullopt;
  };
  if (tune) {
    if (auto bad = only("--tune", {"--tune", "--cache", "--device", "--max-candidates", "--skip-cached"})) return usage_error(*bad);
    if (!cache) return usage_error("--tune needs --cache OUT (the tuning cache file to write)");
    const ktune::tools::ShapesFile shapes = ktune::tools::read_shapes_file(*tune);
    for (const auto& w : shapes.warnings) std::fprintf(stderr, "ktune-profile: warning: %s\n", w.c_str());
    if (!shapes.errors.empty()) {
      constexpr std::size_t shown = 20;
      for (std::size_t i = 0; i < shapes.errors.size() && i < shown; ++i)
        std::fprintf(stderr, "ktune-profile: %s\n", shapes.errors[i].c_str());
      if (shapes.errors.size() > shown) std::fprintf(stderr, "ktune-profile: ... and %zu more errors\n", shapes.errors.size() - shown);
      if (shapes.bad_lines > 0)
        std::fprintf(stderr, "ktune-profile: %s: %zu bad line%s; each line: %s, or %s (see ktune-profile --help)\n",
                     tune->c_str(), shapes.bad_lines, shapes.bad_lines == 1 ? "" : "s",
                     std::string(ktune::tools::shape_line_syntax).c_str(), std::string(ktune::tools::conv_line_syntax).c_str());
      return 2;
    }
    ktune::profile::TuneOptions to;
    to.shapes_path = *tune;
    to.cache_path = *cache;
    to.device = device;
    to.max_candidates = max_candidates;
    to.skip_cached = skip_cached;
    return ktune::profile::tune_shapes(to, shapes);
  }
  if (quality) {
    if (auto bad = only("--tune-quality", {"--tune-quality", "--device", "--max-candidates", "--quick", "--verbose"})) return usage_error(*bad);
    std::vector<ktune::tools::ShapeProblem> problems;
    if (quality->empty()) {
      for (const std::string& line : ktune::profile::default_quality_shapes(quick)) {
        ktune::tools::ShapeProblem p;
        std::string why;
        if (!ktune::tools::parse_shape_line(line, p, why)) return usage_error("built-in shape '" + line + "': " + why);
        problems.push_back(p);
      }
    } else {
      const ktune::tools::ShapesFile shapes = ktune::tools::read_shapes_file(*quality);
      for (const auto& w : shapes.warnings) std::fprintf(stderr, "ktune-profile: warning: %s\n", w.c_str());
      if (!shapes.errors.empty()) {
        for (const auto& e : shapes.errors) std::fprintf(stderr, "ktune-profile: %s\n", e.c_str());
        return 2;
      }
      if (!shapes.convs.empty())
        return usage_error("--tune-quality compares GEMM tactics; " + *quality + " has " + std::to_string(shapes.convs.size()) +
                           " conv line(s) (line " + std::to_string(shapes.convs.front().line) + "): leave them out");
      problems = shapes.problems;
    }
    if (problems.empty()) return usage_error("--tune-quality: no shapes");
    ktune::profile::QualityOptions qo;
    qo.device = device;
    qo.max_candidates = max_candidates;
    qo.quick = quick;
    qo.verbose = verbose;
    return ktune::profile::tune_quality(qo, problems);
  }
  if (verbose) return usage_error("--verbose applies to --tune-quality");
  if (skip_cached) return usage_error("--skip-cached applies to --tune");
  if (explain) {
    if (cache) return usage_error("--cache does not apply to --explain (it neither reads nor writes a cache)");
    if (auto bad = only("--explain", {"--explain", "--device", "--max-candidates"})) return usage_error(*bad);
    ktune::profile::ExplainOptions eo;
    std::string why;
    if (std::string_view(*explain).substr(0, 5) == "conv " || *explain == "conv") {
      ktune::tools::ConvShapeProblem cp;
      if (!ktune::tools::parse_conv_shape_line(*explain, cp, why)) return usage_error("--explain '" + *explain + "': " + why);
      eo.conv = cp;
    } else if (!ktune::tools::parse_shape_line(*explain, eo.problem, why)) {
      return usage_error("--explain '" + *explain + "': " + why);
    }
    eo.device = device;
    eo.max_candidates = max_candidates;
    return ktune::profile::explain_problem(eo);
  }
  if (max_candidates >= 0) return usage_error("--max-candidates applies to --tune, --explain and --tune-quality");

  if (list) {
    if (cache) return usage_error("--cache does not apply to --list");
    if (op && *op != "gemm" && *op != "conv") return usage_error("unknown --op '" + *op + "' (gemm, conv)");
    return ktune::profile::list_families(filter, op ? *op : std::string());
  }

  // Problems: --gemm and/or --conv, or the defaults (narrowed by --op / --dtype / --layout).
  std::optional<Precision> precision;
  if (dtype) {
    precision = ktune::tools::parse_precision(*dtype);
    if (!precision) return usage_error("unknown --dtype '" + *dtype + "' (f16, bf16, f32, tf32)");
  }
  if (op && *op != "gemm" && *op != "conv") return usage_error("unknown --op '" + *op + "' (gemm, conv)");
  if (op && (gemm || conv)) return usage_error("--op selects default problems: not with --gemm or --conv");
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
  }
  if (conv) {
    if (layout && !gemm) return usage_error("--layout applies to GEMM problems, not to --conv (x is NHWC, w KRSC, y NPQK)");
    const Precision cp = precision.value_or(Precision::f16);
    if (cp != Precision::f16 && cp != Precision::bf16)
      return usage_error("--conv takes --dtype f16 or bf16, not " + std::string(ktune::tools::to_string(cp)));
    const ktune::DType type = cp == Precision::bf16 ? ktune::DType::bf16 : ktune::DType::f16;
    // bias + ReLU unless --epilogue identity: what cuDNN's fused call computes.
    const ktune::EpilogueSpec epi = epilogue && !bias_relu ? ktune::EpilogueSpec{} : ktune::bias_activation(ktune::Activation::relu);
    ktune::Conv2dDesc d;
    std::string why;
    if (!ktune::tools::parse_conv_spec(*conv, type, epi, d, why)) return usage_error("--conv: " + why);
    opt.conv_problems.push_back(d);
  }
  if (!gemm && !conv) {
    if (epilogue) return usage_error("--epilogue applies to --gemm and --conv");
    if (!op || *op == "gemm")
      for (const ProblemSpec& p : ktune::tools::default_problems(quick)) {
        if (precision && p.precision != *precision) continue;
        if (layout && (p.a_layout != la || p.b_layout != lb)) continue;
        opt.problems.push_back(p);
      }
    if (!op || *op == "conv")
      for (const ktune::Conv2dDesc& d : ktune::tools::default_conv_problems()) {
        if (precision && (*precision == Precision::f32 || *precision == Precision::tf32 ||
                          d.type != (*precision == Precision::bf16 ? ktune::DType::bf16 : ktune::DType::f16)))
          continue;
        if (layout) continue;  // conv problems have no GEMM layout
        opt.conv_problems.push_back(d);
      }
    if (opt.problems.empty() && opt.conv_problems.empty())
      return usage_error("no default problem matches --op/--dtype/--layout; use --gemm MxNxK or --conv SPEC");
  }
  if (cache) opt.cache_path = *cache;
  opt.filter = filter;
  opt.quick = quick;
  opt.iters = iters;
  opt.repeats = repeats > 0 ? repeats : (quick ? 5 : 9);
  opt.target_ms = quick ? 5.0 : 20.0;
  opt.check_reference = !no_ref_check;
  opt.paired_rounds = no_paired ? 0 : opt.repeats;
  opt.device = device;
  opt.csv_path = csv;
  opt.json_path = json;

  if (ktune::cuda_device_count() == 0) {
    std::fprintf(stderr, "ktune-profile: no CUDA device found (use --list to see the kernel families)\n");
    return 1;
  }
  return ktune::profile::run_problems(opt);
}
