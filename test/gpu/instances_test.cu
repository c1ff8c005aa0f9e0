// GPU tests: every instance of the dispatch table, run by name, against a float64 CPU reference —
// shape classes (1×1×1, primes, non-multiples of every tile, K < BK, large K, exact tiles, odd and
// even-but-unaligned leading dimensions, odd pointers) × all three output types, then every epilogue
// (alpha/beta, C aliasing D, bias, residual, residual aliasing D, activations, clamp, compositions).
// Also: the constraint model against the compiler (registers, spills, shared memory).
#include <doctest/doctest.h>

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/test_util.cuh"

using namespace kt;

namespace {

using ShapeCase = GemmShape;

// Small shapes: the float64 CPU reference is computed once per (shape, operand type, layouts) and
// shared by every instance and output type.
const std::vector<ShapeCase>& shape_cases() {
  static const std::vector<ShapeCase> cases = {
      {"1x1x1", 1, 1, 1},
      {"primes", 127, 257, 131},
      {"non-multiples of every tile, 16-byte aligned, padded ldd", 200, 296, 72, 0, 0, 8},
      {"non-multiples of every tile, 8-byte aligned K and N", 136, 260, 76},
      {"exact tiles", 256, 256, 128},
      // 16-bit D rows 8-byte but not 16-byte aligned: the sm80 fast path's 4-byte stores (16-byte elsewhere)
      {"exact tiles, ldd a multiple of 4, not 8", 256, 256, 64, 0, 0, 4},
      {"K < BK (odd, only 1-element instances)", 129, 65, 7},
      {"K < BK, 16-byte aligned (one partial k-tile)", 100, 136, 24},
      {"large K", 64, 64, 4096},
      {"odd leading dimensions", 96, 80, 48, 3, 5, 3},
      {"even leading dimensions not multiples of 4", 96, 80, 48, 2, 2, 2},
      {"pointers offset by one element", 33, 40, 100, 0, 0, 0, 1, 1, 1},
  };
  return cases;
}

constexpr DType kOutTypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr DType kOperandTypes[] = {DType::f16, DType::bf16, DType::f32};

std::vector<const GemmKernelEntry*> entries_for(DType operand, Layout la, Layout lb) {
  std::vector<const GemmKernelEntry*> out;
  for (const auto& e : gemm_table().entries())
    if (e.config.operand() == operand && e.config.a_layout == la && e.config.b_layout == lb) out.push_back(&e);
  return out;
}

// Every (problem kind, layouts) combination that the table serves on this device.
std::set<std::tuple<MathOp, Layout, Layout>> combos_in_table(const DeviceInfo& dev) {
  std::set<std::tuple<MathOp, Layout, Layout>> s;
  for (const auto& e : gemm_table().entries())
    if (runs_on_device(e, dev).ok()) s.insert({problem_kind(e.config.math), e.config.a_layout, e.config.b_layout});
  return s;
}

std::string combo_name(const std::tuple<MathOp, Layout, Layout>& c) {
  return std::string(to_string(std::get<0>(c))) + " " + layout_letter(std::get<1>(c)) + layout_letter(std::get<2>(c));
}

// Would the instance take this problem, with D of type `out`, on this device? Misalignment is a
// legitimate skip; so is an output type the instance refuses (unsupported: the swap-AB instances write
// 16-bit D only, dispatch.hpp swap_ab_implements).
Status output_accepts(const GemmKernelEntry& e, const Matrix& A, const Matrix& B, const DeviceInfo& dev, DType out) {
  GemmDesc d;
  d.m = A.st.rows;
  d.n = B.st.cols;
  d.k = A.st.cols;
  d.ab_type = A.st.type;
  d.a_layout = A.st.row_major ? Layout::row : Layout::col;
  d.b_layout = B.st.row_major ? Layout::row : Layout::col;
  d.lda = A.st.ld;
  d.ldb = B.st.ld;
  d.d_type = out;
  d.compute = compute_for(e.config.math);
  GemmOperands o;
  o.a = A.data();
  o.b = B.data();
  d = resolved(d);
  return can_implement(e, d, alignment_of(d, o), &dev);
}

// The same with an output type the instance takes (f32; f16 for the swap-AB instances).
Status instance_accepts(const GemmKernelEntry& e, const Matrix& A, const Matrix& B, const DeviceInfo& dev) {
  return output_accepts(e, A, B, dev, is_swap_ab(e.config) ? DType::f16 : DType::f32);
}

// kOutTypes[first], or the next one (cyclically) that the instance takes on this problem: the rotation
// of output types over (instance, case) pairs, kept for every instance that takes every type.
DType accepted_out_type(const GemmKernelEntry& e, const Matrix& A, const Matrix& B, const DeviceInfo& dev, std::size_t first) {
  for (std::size_t i = 0; i < 3; ++i) {
    const DType t = kOutTypes[(first + i) % 3];
    if (output_accepts(e, A, B, dev, t).code() != StatusCode::unsupported) return t;
  }
  return kOutTypes[first % 3];
}

struct Failures {
  int count = 0;
  void report(const std::string& msg) {
    ++count;
    if (count <= 40) FAIL_CHECK(msg);
    else if (count == 41) FAIL_CHECK("further failures not printed individually");
  }
};

}  // namespace

TEST_CASE("every instance matches the float64 reference on every shape class and output type") {
  const auto& table = gemm_table().entries();
  REQUIRE_FALSE(table.empty());
  DeviceInfo dev;
  backend::device_info(dev);
  const auto combos = combos_in_table(dev);
  std::map<std::string_view, int> shapes_run;  // per instance: shape classes it ran
  Failures fails;
  int runs = 0;
  std::uint64_t seed = 1;

  for (const ShapeCase& sc : shape_cases()) {
    std::set<std::tuple<MathOp, Layout, Layout>> covered;
    for_each_operand_set(
        sc, kOperandTypes, seed, entries_for,
        [&](const auto& entries, const Matrix& A, const Matrix& B, const std::vector<double>& acc, Rng& rng, Layout la, Layout lb) {
          for (const GemmKernelEntry* e : entries) {
            const Status acc_ok = instance_accepts(*e, A, B, dev);
            if (acc_ok.code() == StatusCode::misaligned) continue;
            if (!acc_ok.ok()) {
              MESSAGE(e->name << " cannot run on this device: " << acc_ok.to_string());
              continue;
            }
            for (DType out : kOutTypes) {
              // An output type the instance refuses (swap AB: f32 D) is skipped by can_implement's Status.
              if (const Status os = output_accepts(*e, A, B, dev, out); !os.ok()) {
                CHECK_MESSAGE(os.code() == StatusCode::unsupported, e->name << ": " << os.to_string());
                continue;
              }
              OutputCase oc;
              oc.d_type = out;
              oc.ldd_pad = sc.pad_d;
              oc.d_offset = sc.off_d;
              const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng);
              ++runs;
              if (const std::string f = r.failure(tolerance(e->config.math, out)); !f.empty())
                fails.report(std::string(e->name) + " on " + sc.what + " [" + describe(r.desc) + "]: " + f);
            }
            covered.insert({problem_kind(e->config.math), la, lb});
            ++shapes_run[e->name];
          }
        });
    // Each problem kind × layout of the table ran this shape on at least one instance.
    for (const auto& c : combos)
      CHECK_MESSAGE(covered.count(c) == 1, combo_name(c) << " has no instance that ran " << sc.what);
  }
  // Every instance the device can run did run: 1-element instances every shape, 16-byte instances the
  // aligned ones (three of the classes).
  for (const auto& e : table) {
    const Status on_dev = runs_on_device(e, dev);
    if (!on_dev.ok()) {
      MESSAGE("not run on this device: " << e.name << ": " << on_dev.to_string());
      continue;
    }
    CHECK_MESSAGE(shapes_run[e.name] >= 3, e.name << " ran only " << shapes_run[e.name] << " shape classes");
  }
  CHECK(fails.count == 0);
  MESSAGE(runs << " instance runs over " << shape_cases().size() << " shape classes, " << table.size()
               << " instances, " << fails.count << " failures");
}

namespace {

struct EpiCase {
  std::string what;
  EpilogueSpec spec;
  bool c_aliases_d = false;
  bool residual_aliases_d = false;
};

std::vector<EpiCase> epilogue_cases() {
  std::vector<EpiCase> v;
  auto spec = [](float alpha, float beta, bool bias, bool residual, Activation act, bool clamp = false,
                 float lo = 0.0f, float hi = 0.0f) {
    EpilogueSpec e;
    e.alpha = alpha;
    e.beta = beta;
    e.bias = bias;
    e.residual = residual;
    e.activation = act;
    e.clamp = clamp;
    e.clamp_lo = lo;
    e.clamp_hi = hi;
    return e;
  };
  v.push_back({"identity", spec(1, 0, false, false, Activation::none)});
  v.push_back({"alpha", spec(0.5f, 0, false, false, Activation::none)});
  v.push_back({"alpha and beta with C", spec(1.5f, -0.75f, false, false, Activation::none)});
  v.push_back({"C aliases D", spec(1.0f, 0.5f, false, false, Activation::none), true});
  v.push_back({"bias", spec(1, 0, true, false, Activation::none)});
  v.push_back({"residual", spec(1, 0, false, true, Activation::none)});
  v.push_back({"residual aliases D", spec(0.25f, 0, false, true, Activation::none), false, true});
  v.push_back({"relu", spec(1, 0, false, false, Activation::relu)});
  v.push_back({"gelu_tanh", spec(1, 0, false, false, Activation::gelu_tanh)});
  v.push_back({"gelu_erf", spec(1, 0, false, false, Activation::gelu_erf)});
  v.push_back({"silu", spec(1, 0, false, false, Activation::silu)});
  v.push_back({"clamp", spec(1, 0, false, false, Activation::none, true, -0.25f, 0.3f)});
  v.push_back({"bias + relu", spec(1, 0, true, false, Activation::relu)});
  // sm90: alpha, bias, ReLU and clamp together on the accumulator fragments; bias + residual + ReLU
  // (the ResNet shortcut) through the staged store.
  v.push_back({"alpha, bias, relu, clamp", spec(0.5f, 0, true, false, Activation::relu, true, -0.25f, 0.75f)});
  v.push_back({"bias, residual, relu", spec(1, 0, true, true, Activation::relu)});
  v.push_back({"everything, C and residual aliasing D",
               spec(0.75f, 0.5f, true, true, Activation::gelu_tanh, true, -1.0f, 1.0f), true, true});
  v.push_back({"alpha, beta, bias, residual, silu, clamp",
               spec(2.0f, -1.0f, true, true, Activation::silu, true, -0.5f, 4.0f)});
  return v;
}

}  // namespace

TEST_CASE("every instance computes every epilogue") {
  const auto& table = gemm_table().entries();
  REQUIRE_FALSE(table.empty());
  DeviceInfo dev;
  backend::device_info(dev);
  const auto cases = epilogue_cases();
  // An aligned shape every instance accepts (edges in M, N and K for every tile) with packed and with
  // odd ldd (vector and scalar stores), and an odd shape for the 1-element instances.
  const std::vector<ShapeCase> shapes = {
      {"72x136x40 packed D", 72, 136, 40},
      {"72x136x40 odd ldd", 72, 136, 40, 0, 0, 3},
      {"37x45x29", 37, 45, 29},
  };
  Failures fails;
  int runs = 0;
  std::map<std::string_view, int> per_instance;
  std::uint64_t seed = 1000;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const ShapeCase& sc = shapes[si];
    for_each_operand_set(
        sc, kOperandTypes, seed, entries_for,
        [&](const auto& entries, const Matrix& A, const Matrix& B, const std::vector<double>& acc, Rng& rng, Layout, Layout) {
          for (std::size_t ei = 0; ei < entries.size(); ++ei) {
            const GemmKernelEntry* e = entries[ei];
            if (!instance_accepts(*e, A, B, dev).ok()) continue;
            for (std::size_t ci = 0; ci < cases.size(); ++ci) {
              OutputCase oc;
              // Rotate the output type so every (instance, epilogue) pair sees different types (among
              // those the instance takes: swap AB skips f32).
              oc.d_type = accepted_out_type(*e, A, B, dev, ci + ei + si);
              oc.ldd_pad = sc.pad_d;
              oc.epilogue = cases[ci].spec;
              oc.c_aliases_d = cases[ci].c_aliases_d;
              oc.residual_aliases_d = cases[ci].residual_aliases_d;
              const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng);
              ++runs;
              ++per_instance[e->name];
              if (const std::string f = r.failure(tolerance(e->config.math, oc.d_type)); !f.empty())
                fails.report(std::string(e->name) + " epilogue '" + cases[ci].what + "' on " + sc.what + " [" + describe(r.desc) + "]: " + f);
            }
          }
        });
  }
  for (const auto& e : table)
    if (runs_on_device(e, dev).ok())
      CHECK_MESSAGE(per_instance[e.name] >= static_cast<int>(2 * cases.size()),
                    e.name << " ran " << per_instance[e.name] << " epilogue cases");
  CHECK(fails.count == 0);
  MESSAGE(runs << " epilogue runs, " << fails.count << " failures");
}

TEST_CASE("sm90 instances with 2-CTA clusters (TMA multicast) and persistent walks of several tiles") {
  // The launch options the tuner tries on Hopper (@cl2) and bounded grids (max_ctas): each CTA then
  // walks several tiles, so the ring wraps across tiles and the epilogue of one tile overlaps the
  // producer's loads of the next; odd tile counts leave a cluster's second tile past M or N.
  DeviceInfo dev;
  backend::device_info(dev);
  const std::vector<ShapeCase> shapes = {
      {"264x392x328 (odd tile counts, k-tiles > stages)", 264, 392, 328},
      {"600x136x200, padded ldd", 600, 136, 200, 0, 0, 8},
  };
  struct LaunchCase {
    const char* what;
    GemmLaunchOptions opt;
  };
  std::vector<LaunchCase> launches(3);
  launches[0].what = "cluster 2";
  launches[0].opt.cluster = 2;
  launches[1].what = "cluster 2, max_ctas 4";
  launches[1].opt.cluster = 2;
  launches[1].opt.max_ctas = 4;
  launches[2].what = "max_ctas 3";
  launches[2].opt.max_ctas = 3;
  // Epilogues rotate: identity (store only), bias + ReLU (sm90: on the accumulator fragments, the bias
  // prefetched per tile), alpha/beta + bias + residual + SiLU (the staged store).
  std::vector<EpilogueSpec> epilogues(3);
  epilogues[1].bias = true;
  epilogues[1].activation = Activation::relu;
  epilogues[2].alpha = 0.75f;
  epilogues[2].beta = 0.5f;
  epilogues[2].bias = true;
  epilogues[2].residual = true;
  epilogues[2].activation = Activation::silu;
  Failures fails;
  int runs = 0;
  std::map<std::string_view, int> per_instance;
  std::uint64_t seed = 5000;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const ShapeCase& sc = shapes[si];
    const auto sm90_entries = [&](DType ab, Layout la, Layout lb) {
      std::vector<const GemmKernelEntry*> entries;
      for (const GemmKernelEntry* e : entries_for(ab, la, lb))
        if (is_wgmma(e->config.math) && runs_on_device(*e, dev).ok()) entries.push_back(e);
      return entries;
    };
    for_each_operand_set(
        sc, kOperandTypes, seed, sm90_entries,
        [&](const auto& entries, const Matrix& A, const Matrix& B, const std::vector<double>& acc, Rng& rng, Layout, Layout) {
          for (std::size_t ei = 0; ei < entries.size(); ++ei) {
            const GemmKernelEntry* e = entries[ei];
            if (!instance_accepts(*e, A, B, dev).ok()) continue;
            for (std::size_t li = 0; li < launches.size(); ++li) {
              // Launch options the instance refuses (swap AB: clusters) are skipped by their Status.
              if (const Status ls = check_launch_options(*e, launches[li].opt); !ls.ok()) {
                CHECK_MESSAGE(is_swap_ab(e->config), e->name << " refuses " << launches[li].what << ": " << ls.to_string());
                CHECK(ls.code() == StatusCode::unsupported);
                continue;
              }
              OutputCase oc;
              oc.d_type = accepted_out_type(*e, A, B, dev, ei + li + si);
              oc.ldd_pad = sc.pad_d;
              oc.epilogue = epilogues[(ei + li + si) % epilogues.size()];
              const RunResult r = run_checked(A, B, acc, e->config.math, oc, e->name.data(), rng, nullptr,
                                              launches[li].opt);
              ++runs;
              ++per_instance[e->name];
              if (const std::string f = r.failure(tolerance(e->config.math, oc.d_type)); !f.empty())
                fails.report(std::string(e->name) + " with " + launches[li].what + " on " + sc.what + " [" + describe(r.desc) + "]: " + f);
            }
          }
        });
  }
  for (const auto& e : gemm_table().entries())
    if (is_wgmma(e.config.math) && runs_on_device(e, dev).ok()) {
      const auto taken = std::count_if(launches.begin(), launches.end(),
                                       [&](const LaunchCase& l) { return check_launch_options(e, l.opt).ok(); });
      CHECK(taken >= 1);
      CHECK_MESSAGE(per_instance[e.name] >= static_cast<int>(taken), e.name << " ran " << per_instance[e.name]
                                                                          << " cluster/persistent cases");
    }
  CHECK(fails.count == 0);
  MESSAGE(runs << " sm90 cluster/persistent runs, " << fails.count << " failures");
}

TEST_CASE("the constraint model agrees with the compiler: no spills, registers and shared memory fit") {
  const auto& table = gemm_table().entries();
  REQUIRE_FALSE(table.empty());
  DeviceInfo dev;
  backend::device_info(dev);
  std::ostringstream t;
  t << "\n"
    << std::left << std::setw(58) << "instance" << std::right << std::setw(10) << "model smem" << std::setw(8)
    << "threads" << std::setw(12) << "model regs" << std::setw(15) << "compiler regs" << std::setw(12)
    << "local bytes" << std::setw(13) << "static smem"
    << "\n";
  int worst_under = 0;
  std::string worst_name;
  for (const auto& e : table) {
    CAPTURE(e.name);
    if (!runs_on_device(e, dev).ok()) {
      t << std::left << std::setw(58) << e.name << "  (not for this device)\n";
      continue;
    }
    cudaFuncAttributes a{};
    KT_CUDA(e.attributes(&a));
    t << std::left << std::setw(58) << e.name << std::right << std::setw(10) << e.resources.smem_bytes << std::setw(8)
      << e.resources.threads << std::setw(12) << e.resources.registers << std::setw(15) << a.numRegs << std::setw(12)
      << a.localSizeBytes << std::setw(13) << a.sharedSizeBytes << "\n";
    CHECK_MESSAGE(a.localSizeBytes == 0, e.name << " uses " << a.localSizeBytes << " bytes of local memory (spills)");
    CHECK(a.numRegs <= 255);
    // The block of the config's size is launchable with the registers the compiler chose.
    CHECK(a.maxThreadsPerBlock >= e.resources.threads);
    CHECK(static_cast<long long>(a.numRegs) * e.resources.threads <= 65536);
    // All shared memory is dynamic and accounted for by the model, within the device's opt-in limit.
    CHECK(a.sharedSizeBytes == 0);
    CHECK(e.resources.smem_bytes + static_cast<int>(a.sharedSizeBytes) <= dev.smem_optin_bytes);
    if (a.numRegs - e.resources.registers > worst_under) {
      worst_under = a.numRegs - e.resources.registers;
      worst_name = std::string(e.name);
    }
  }
  MESSAGE("model vs compiler on " << dev.name << " (sm" << dev.cc << "):" << t.str());
  if (worst_under > 0) MESSAGE("largest register under-estimate: " << worst_under << " (" << worst_name << ")");
}
