// The GPU-free part of `ktune-profile --explain` (tools/ktune-profile/explain_model.hpp) against this
// binary's dispatch table: every instance is accounted for exactly once (other math/layout, cannot
// implement with a reason, or ranked), pruned family configs carry the constraint model's verdict,
// and the ranking is the tuner's.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "common/shapes_file.hpp"
#include "ktune-profile/explain_model.hpp"

using namespace ktune;
using ktune::profile::ModelExplanation;

namespace {

tools::ShapeProblem problem(std::string_view line) {
  tools::ShapeProblem p;
  std::string why;
  REQUIRE_MESSAGE(tools::parse_shape_line(line, p, why), why);
  return p;
}

ModelExplanation explain(std::string_view line, const DeviceInfo& dev = profile::assumed_h200()) {
  const tools::ShapeProblem p = problem(line);
  return profile::explain_model(p.desc(), p.alignment(), dev);
}

DeviceInfo a100_like() {
  DeviceInfo d;
  d.ordinal = 0;
  d.name = "A100-like";
  d.cc = 80;
  d.sm_count = 108;
  d.l2_bytes = 40 << 20;
  d.smem_optin_bytes = 163 * 1024;
  return d;
}

// Each table entry appears once: other math/layout, cannot implement, or ranked.
void check_accounting(const ModelExplanation& x) {
  CHECK(x.table_size == gemm_table().size());
  std::size_t per_family = 0;
  for (const auto& [fam, n] : x.other_math_layout) per_family += n;
  CHECK(per_family == x.other_math_layout_total);
  CHECK(x.other_math_layout_total + x.cannot.size() + x.ranked.size() == x.table_size);
  std::set<std::string> names;
  for (const auto& r : x.cannot) names.insert(r.name);
  for (const auto& r : x.ranked) names.insert(std::string(r.entry->name));
  CHECK(names.size() == x.cannot.size() + x.ranked.size());
}

}  // namespace

TEST_CASE("explain model: bf16 tn 4096^3 on the assumed H200") {
  REQUIRE(gemm_table().size() > 0);
  const DeviceInfo h200 = profile::assumed_h200();
  CHECK(h200.cc == 90);
  CHECK(h200.sm_count == 132);
  CHECK(h200.smem_optin_bytes == 227 * 1024);

  const tools::ShapeProblem p = problem("bf16 tn 4096x4096x4096");
  const ModelExplanation x = profile::explain_model(p.desc(), p.alignment(), h200);
  check_accounting(x);
  REQUIRE_FALSE(x.ranked.empty());
  // Aligned bf16: every instance for bf16 tn accepts it on an H200, so none "cannot implement"; only
  // the repack routes refuse (they serve misaligned operands).
  for (const auto& r : x.cannot) {
    CAPTURE(r.name);
    CHECK(r.family == "route_repack");
    CHECK(r.reason.find("operands already aligned") != std::string::npos);
  }
  // Ranks are 1..n, costs ascending, the relative cost of rank 1 is 1.
  for (std::size_t i = 0; i < x.ranked.size(); ++i) {
    CHECK(x.ranked[i].rank == static_cast<int>(i + 1));
    CHECK(can_implement(*x.ranked[i].entry, resolved(p.desc()), p.alignment(), &h200).ok());
    if (i > 0) CHECK(x.ranked[i].cost >= x.ranked[i - 1].cost);
  }
  CHECK(x.ranked.front().relative == doctest::Approx(1.0));
  // The cost model halves mma.sync on Hopper: the first choice is a wgmma instance.
  CHECK(is_wgmma(x.ranked.front().entry->config.math));
  // The same order as the tuner's.
  const tuner::Tuner ranker(nullptr, &gemm_table());
  const auto ranked = ranker.ranked_candidates(resolved(p.desc()), p.alignment(), h200, {});
  REQUIRE(ranked.size() == x.ranked.size());
  for (std::size_t i = 0; i < ranked.size(); ++i) CHECK(ranked[i] == x.ranked[i].entry);

  // Families: the bf16 tn configs of each default family, with the model's verdicts.
  std::size_t relevant = 0, pruned = 0, valid = 0;
  for (const auto& f : x.families) {
    CAPTURE(f.family);
    CHECK(f.relevant == f.valid + f.pruned.size());
    CHECK(f.relevant <= f.configs);
    CHECK(f.in_table + f.not_in_table.size() == f.valid);
    for (const auto& pc : f.pruned) {
      CHECK_FALSE(pc.verdict.ok());
      CHECK(gemm_table().find(pc.name) == nullptr);  // pruned configs are never instantiated
      CHECK(pc.name.find("_tn_") != std::string::npos);
    }
    relevant += f.relevant;
    pruned += f.pruned.size();
    valid += f.valid;
    if (f.family == "sm80_simt_f32" || f.family == "sm80_mma_tf32") CHECK(f.relevant == 0);
  }
  CHECK(relevant > 0);
  CHECK(pruned > 0);  // e.g. sm80_mma_f16_unaligned loses its 64x64 warps to the register rules (see --list)
  // This binary holds every valid config of the default families, and they are exactly the ranked ones.
  CHECK(valid == x.ranked.size());
}

TEST_CASE("explain model: an unaligned problem leaves only the narrow-vector instances and the repack routes") {
  const ModelExplanation x = explain("bf16 tn 4095x4097x4093");
  check_accounting(x);
  REQUIRE_FALSE(x.ranked.empty());
  bool saw_route = false;
  for (const auto& r : x.ranked) {
    saw_route |= is_route(*r.entry);
    CHECK((r.entry->config.align == 1 || is_route(*r.entry)));
  }
  CHECK(saw_route);
  CHECK(is_route(*x.ranked.front().entry));  // the copy costs less than narrow vectors at this size
  REQUIRE_FALSE(x.cannot.empty());
  bool saw_tma = false;
  for (const auto& r : x.cannot) {
    CAPTURE(r.name);
    CHECK(r.code == StatusCode::misaligned);
    CHECK(r.reason.find("A allows 1, B allows 1") != std::string::npos);
    saw_tma |= r.reason.find("TMA") != std::string::npos;
  }
  CHECK(saw_tma);  // the wgmma instances say why: TMA needs 16-byte alignment
}

TEST_CASE("explain model: wgmma instances cannot run on an sm80 device, and say so") {
  const ModelExplanation x = explain("f16 nn 2048x2048x2048", a100_like());
  check_accounting(x);
  REQUIRE_FALSE(x.ranked.empty());
  for (const auto& r : x.ranked) CHECK_FALSE(is_wgmma(r.entry->config.math));
  std::size_t wgmma = 0;
  for (const auto& r : x.cannot) {
    CAPTURE(r.name);
    if (r.family == "route_repack" && r.reason.find("operands already aligned") != std::string::npos) continue;
    CHECK(r.code == StatusCode::no_instance);
    CHECK(r.reason.find("sm90a") != std::string::npos);
    ++wgmma;
  }
  CHECK(wgmma > 0);
}

TEST_CASE("explain model: instances of another math are counted per family, not listed") {
  const ModelExplanation x = explain("tf32 tn 1024x1024x1024");
  check_accounting(x);
  CHECK(x.other_math_layout.count("sm80_mma_f16") == 1);
  CHECK(x.other_math_layout.count("sm90_wgmma_f16") == 1);
  CHECK(x.other_math_layout.count("sm80_simt_f32") == 1);
  // On the (assumed) H200, tf32 tn is served by mma.sync tf32 and by wgmma tf32; the cost model halves
  // mma.sync on Hopper, so wgmma ranks first.
  for (const auto& r : x.ranked) CHECK(math_implements(r.entry->config.math, MathOp::mma_tf32));
  REQUIRE_FALSE(x.ranked.empty());
  CHECK(x.ranked.front().entry->config.math == MathOp::wgmma_tf32);
  for (const auto& f : x.families)
    if (f.family == "sm90_wgmma_f16" || f.family == "sm80_mma_f16") CHECK(f.relevant == 0);
}

TEST_CASE("explain model: the tactics in the tuner's measuring order, each instance's best first") {
  REQUIRE(gemm_table().size() > 0);
  const DeviceInfo h200 = profile::assumed_h200();
  for (const char* line : {"bf16 tn 16x4096x4096", "bf16 tn 4096x4096x4096", "f16 tn 256x256x512"}) {
    CAPTURE(line);
    const tools::ShapeProblem p = problem(line);
    const ModelExplanation x = profile::explain_model(p.desc(), p.alignment(), h200);
    REQUIRE(x.tactics.size() >= x.ranked.size());
    std::set<std::string> names;
    std::set<const GemmKernelEntry*> instances;
    for (std::size_t i = 0; i < x.tactics.size(); ++i) {
      const auto& t = x.tactics[i];
      CHECK(t.rank == static_cast<int>(i + 1));
      CHECK(names.insert(t.name).second);
      CHECK(t.name.rfind(std::string(t.entry->name), 0) == 0);
      // The first x.ranked.size() tactics are one per instance; every instance's default options appear.
      if (i < x.ranked.size()) CHECK(instances.insert(t.entry).second);
    }
    CHECK(instances.size() == x.ranked.size());
    for (const auto& r : x.ranked) CHECK(names.count(std::string(r.entry->name)) == 1);
  }
}

// ---- conv2d (--explain "conv ...") ----------------------------------------------------------------

namespace {

profile::ConvModelExplanation explain_conv(std::string_view line, const DeviceInfo& dev = profile::assumed_h200()) {
  tools::ConvShapeProblem p;
  std::string why;
  REQUIRE_MESSAGE(tools::parse_conv_shape_line(line, p, why), why);
  return profile::explain_conv_model(p.desc, p.alignment(), dev);
}

// Each conv table entry appears once: another math, cannot implement, or ranked; the families account for
// every instance of this math.
void check_conv_accounting(const profile::ConvModelExplanation& x) {
  CHECK(x.table_size == conv_table().size());
  std::size_t per_family = 0;
  for (const auto& [fam, n] : x.other_math) per_family += n;
  CHECK(per_family == x.other_math_total);
  CHECK(x.other_math_total + x.cannot.size() + x.ranked.size() == x.table_size);
  std::size_t valid = 0;
  for (const auto& f : x.families) {
    CAPTURE(f.family);
    CHECK(f.relevant <= f.configs);
    CHECK(f.valid + f.pruned.size() == f.relevant);
    CHECK(f.in_table + f.not_in_table.size() == f.valid);
    valid += f.valid;
  }
  CHECK(valid == x.cannot.size() + x.ranked.size());  // this binary holds every valid config of the default families
  // The tactics: ranks 1..n, every ranked instance's default options among them.
  std::set<std::string> names;
  for (std::size_t i = 0; i < x.tactics.size(); ++i) {
    CHECK(x.tactics[i].rank == static_cast<int>(i + 1));
    CHECK(names.insert(x.tactics[i].name).second);
  }
  for (const ConvKernelEntry* e : x.ranked) CHECK(names.count(std::string(e->name)) == 1);
}

}  // namespace

TEST_CASE("explain conv model: 56x56 3x3 64->64 at N = 256 on the assumed H200") {
  REQUIRE(conv_table().size() > 0);
  const profile::ConvModelExplanation x = explain_conv("conv f16 256x56x56x64,64x3x3 bias_relu");
  check_conv_accounting(x);
  REQUIRE_FALSE(x.ranked.empty());
  // The Hopper routes rank ahead of mma.sync; among them the cost model's first is the ping-pong 256x64 tile
  // (the fastest on the H200 in session 18: 132.7 µs against 156.4 on the cooperative 256x64).
  CHECK(is_sm90_iterator(x.ranked.front()->config.iterator));
  CHECK(x.ranked.front()->name == "ktune_conv2d_fprop_sm90_wgmma_f16_tma_im2col_pp_256x64x64_w256x64_s5_a8");
  CHECK(x.tactics.front().relative == doctest::Approx(1.0));
  // Another math: the bf16 instances. Cannot: the 1x1 route (3x3 filters) and the first-layer instances (C = 64).
  std::size_t bf16 = 0;
  for (const ConvKernelEntry& e : conv_table().entries()) bf16 += e.config.operand() == DType::bf16 ? 1 : 0;
  CHECK(bf16 > 0);
  CHECK(x.other_math_total == bf16);
  std::size_t gemm1x1 = 0, first_layer = 0;
  for (const auto& r : x.cannot) {
    CAPTURE(r.name);
    CHECK(r.code == StatusCode::unsupported);
    if (r.reason.find("1x1 filters only") != std::string::npos) ++gemm1x1;
    else if (r.reason.find("specialized for C =") != std::string::npos) ++first_layer;
  }
  CHECK(gemm1x1 > 0);
  CHECK(first_layer > 0);
  CHECK(gemm1x1 + first_layer == x.cannot.size());
}

TEST_CASE("explain conv model: on an sm80 device the Hopper instances cannot run, and say so") {
  const profile::ConvModelExplanation x = explain_conv("conv bf16 32x28x28x128,128x3x3 bias_relu", a100_like());
  check_conv_accounting(x);
  REQUIRE_FALSE(x.ranked.empty());
  for (const ConvKernelEntry* e : x.ranked) CHECK_FALSE(is_sm90_iterator(e->config.iterator));
  std::size_t hopper = 0;
  for (const auto& r : x.cannot) {
    const ConvKernelEntry* e = conv_table().find(r.name);
    REQUIRE(e != nullptr);
    if (!is_sm90_iterator(e->config.iterator)) continue;
    CAPTURE(r.name);
    CAPTURE(r.reason);
    CHECK(r.code != StatusCode::ok);
    ++hopper;
  }
  CHECK(hopper > 0);
}
