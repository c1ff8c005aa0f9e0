// Host tests: the split-K launch options and workspace API (check_launch_options, check_workspace,
// the workspace layout, gemm_workspace_size) and split_k_variants on a fake H200. No GPU needed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "fake_device.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/kernel/cluster_split_k.cuh"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace ktune;
using ktune::test::cluster_split_launch;

namespace {

std::size_t fake_workspace(const GemmDesc& d, const GemmLaunchOptions& o) {
  return split_k_layout(d.m, d.n, 64, 64, o.split_k, o.split_mode).total_bytes;
}
Status launch_nothing(const GemmDesc&, const GemmOperands&, const GemmLaunchOptions&, cudaStream_t) { return {}; }

GemmKernelEntry fake_entry(bool split_capable, TileShape tile = {64, 64, 32}) {
  GemmKernelEntry e;
  e.name = split_capable ? "fake_split" : "fake_plain";
  e.family = "fake";
  e.config.tile = tile;
  e.config.warp = {32, 32};
  e.resources = estimate_resources(e.config);
  e.launch = &launch_nothing;
  if (split_capable) e.workspace_size = &fake_workspace;
  return e;
}

DeviceInfo h200() { return ktune::test::fake_h200(); }

GemmDesc problem(std::int64_t m, std::int64_t n, std::int64_t k) { return ktune::test::bf16_tn_desc(m, n, k); }

}  // namespace

TEST_CASE("split-K launch options are validated") {
  const GemmKernelEntry split = fake_entry(true), plain = fake_entry(false);
  GemmLaunchOptions o;
  CHECK(check_launch_options(plain, o).ok());
  CHECK(check_launch_options(split, o).ok());
  o.split_k = 4;
  CHECK(check_launch_options(split, o).ok());
  const Status s = check_launch_options(plain, o);
  CHECK(s.code() == StatusCode::unsupported);
  CHECK(s.message().find("does not support split-K") != std::string::npos);
  o.split_k = 0;
  CHECK(check_launch_options(split, o).code() == StatusCode::invalid_argument);
  o.split_k = max_split_k + 1;
  CHECK(check_launch_options(split, o).code() == StatusCode::invalid_argument);
  o.split_k = 2;
  o.split_mode = static_cast<SplitKMode>(7);
  CHECK(check_launch_options(split, o).code() == StatusCode::invalid_argument);
}

TEST_CASE("split-K workspace layout") {
  // 100×130 output, 64×64 tiles: 2×3 = 6 tiles → 24 B of counters, padded to 256.
  const SplitKLayout s = split_k_layout(100, 130, 64, 64, 3, SplitKMode::serial);
  CHECK(s.semaphore_bytes == 256);
  CHECK(s.partials_offset == 256);
  CHECK(s.partial_ld == 132);
  CHECK(s.total_bytes == 256 + 3 * 100 * 132 * 4);
  const SplitKLayout p = split_k_layout(100, 130, 64, 64, 3, SplitKMode::parallel);
  CHECK(p.semaphore_bytes == 0);
  CHECK(p.total_bytes == 3 * 100 * 132 * 4);
  CHECK(split_k_layout(100, 130, 64, 64, 1, SplitKMode::serial).total_bytes == 0);
  // Serial mode counts arrivals per slice group and per tile: 64 slices = 16 groups → 17 counters a
  // tile; 6 tiles × 17 × 4 B = 408 B, padded to 512.
  CHECK(split_k_groups(64) == 16);
  CHECK(split_k_groups(13) == 4);
  CHECK(split_k_counters_per_tile(3) == 2);
  CHECK(split_k_layout(100, 130, 64, 64, 64, SplitKMode::serial).semaphore_bytes == 512);
  // (How the kernels' slices cover the k-tiles: validation_limits_test.cpp walks kernel::k_slice.)
}

TEST_CASE("a caller's workspace that is too small is an error") {
  const GemmKernelEntry e = fake_entry(true);
  const GemmDesc d = problem(100, 130, 4096);
  GemmLaunchOptions o;
  o.split_k = 3;
  const std::size_t need = workspace_bytes_for(e, d, o);
  REQUIRE(need > 0);
  GemmOperands ops;
  CHECK(check_workspace(e, d, ops, o).code() == StatusCode::invalid_argument);
  ops.workspace = reinterpret_cast<void*>(std::uintptr_t{0x10000000});
  ops.workspace_bytes = need - 1;
  const Status s = check_workspace(e, d, ops, o);
  CHECK(s.code() == StatusCode::invalid_argument);
  CHECK(s.message().find("workspace too small") != std::string::npos);
  CHECK(s.message().find(std::to_string(need)) != std::string::npos);
  ops.workspace_bytes = need;
  CHECK(check_workspace(e, d, ops, o).ok());
  ops.workspace = reinterpret_cast<void*>(std::uintptr_t{0x10000004});
  CHECK(check_workspace(e, d, ops, o).code() == StatusCode::misaligned);
  o.split_k = 1;  // no split: no workspace needed, none checked
  CHECK(check_workspace(e, d, GemmOperands{}, o).ok());
}

TEST_CASE("split_k_variants: {1} for big problems, a few splits for few tiles and long K") {
  const DeviceInfo dev = h200();
  const GemmKernelEntry split = fake_entry(true), plain = fake_entry(false);
  // Instances without split-K support, or problems that fill the GPU: no split.
  CHECK(split_k_variants(plain, problem(16, 4096, 4096), dev).size() == 1);
  auto big = split_k_variants(split, problem(4096, 4096, 4096), dev);
  REQUIRE(big.size() == 1);
  CHECK(big[0].split_k == 1);
  // Short K: nothing to split.
  CHECK(split_k_variants(split, problem(64, 64, 64), dev).size() == 1);
  // 64×64×65536: one tile, 2048 k-tiles: split, near whole waves, both modes offered.
  auto v = split_k_variants(split, problem(64, 64, 65536), dev);
  REQUIRE(v.size() >= 3);
  CHECK(v[0].split_k == 1);
  std::set<int> splits;
  bool parallel = false;
  for (const auto& o : v) {
    CHECK(check_launch_options(split, o).ok());
    CHECK(o.split_k <= max_split_k);
    splits.insert(o.split_k);
    parallel |= o.split_mode == SplitKMode::parallel;
  }
  CHECK(parallel);
  CHECK(*splits.rbegin() >= 16);
  // Decode: 16×4096×4096 with 64×64 tiles = 64 tiles: splits that make ~1–2 waves.
  auto dec = split_k_variants(split, problem(16, 4096, 4096), dev);
  REQUIRE(dec.size() >= 2);
  CHECK(dec[1].split_k > 1);
  for (const auto& o : dec) CHECK(o.split_k <= 128 / 2);  // at least two k-tiles per slice
}

TEST_CASE("registered instances: split-K exactly on the sm80 mma.sync ones, workspace sizes as the layout says") {
  const DeviceInfo dev = h200();
  for (const GemmKernelEntry& e : gemm_table().entries()) {
    if (is_route(e)) continue;  // a route's workspace holds operand copies
    CAPTURE(e.name);
    CHECK((e.workspace_size != nullptr) == supports_split_k(e.config));
    if (e.workspace_size == nullptr) continue;
    const GemmDesc d = resolved(ktune::test::problem_for(e.config, 16, 4096, 4096));
    GemmOptions opt;
    opt.instance = e.name.data();
    CHECK(gemm_workspace_size(d, opt) == 0);  // no split, no workspace
    for (int s : {2, 8, max_split_k})
      for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
        opt.launch.split_k = s;
        opt.launch.split_mode = mode;
        CHECK(gemm_workspace_size(d, opt) == split_k_layout(e.config, d, opt.launch).total_bytes);
      }
    for (const GemmLaunchOptions& o : split_k_variants(e, d, dev)) CHECK(check_launch_options(e, o).ok());
  }
}

namespace {

// A small-M instance (families::Sm80MmaF16SmallM: 32x64x128 tiles of 16x32 warps, bf16 'tn').
GemmKernelEntry fake_small_m() {
  GemmKernelEntry e = fake_entry(true, {32, 64, 128});
  e.name = "fake_small_m";
  e.config.math = MathOp::mma_bf16;
  e.config.warp = {16, 32};
  e.config.stages = 4;
  e.resources = estimate_resources(e.config);
  return e;
}

}  // namespace

TEST_CASE("cluster split-K: options, names, layout and proposals") {
  const GemmKernelEntry small = fake_small_m(), big = fake_entry(true);
  REQUIRE(supports_cluster_split_k(small.config));
  CHECK_FALSE(supports_cluster_split_k(big.config));  // 64-row tiles
  for (auto [s, cl] : {std::pair{2, 2}, std::pair{3, 3}, std::pair{64, 8}, std::pair{48, 16}, std::pair{256, 16}})
    CHECK(check_launch_options(small, cluster_split_launch(s, cl)).ok());
  CHECK(check_launch_options(big, cluster_split_launch(8, 4)).code() == StatusCode::unsupported);
  // Cluster sizes outside [2, 16] or not dividing split_k; a cluster size without cluster mode.
  for (auto [s, cl] : {std::pair{12, 8}, std::pair{8, 1}, std::pair{32, 32}, std::pair{8, 0}, std::pair{13, 2}})
    CHECK(check_launch_options(small, cluster_split_launch(s, cl)).code() == StatusCode::invalid_argument);
  GemmLaunchOptions stray;
  stray.split_k = 8;
  stray.split_mode = SplitKMode::parallel;
  stray.split_cluster = 4;
  CHECK(check_launch_options(small, stray).code() == StatusCode::invalid_argument);
  stray = GemmLaunchOptions{};
  stray.split_cluster = 2;  // no split at all
  CHECK(check_launch_options(small, stray).code() == StatusCode::invalid_argument);

  // Names: split<N>c<C>, and back.
  CHECK(tactic_name("inst", cluster_split_launch(64, 8)) == "inst@split64c8");
  CHECK(tactic_name("inst", cluster_split_launch(6, 3)) == "inst@split6c3");
  for (const char* name : {"split64c8", "split16c16", "split6c3", "split64c8@rg16"}) {
    GemmLaunchOptions o;
    std::string why;
    CHECK_MESSAGE(parse_launch_suffix(name, o, why), name << ": " << why);
    CHECK(launch_suffix(o) == name);
    CHECK(o.split_mode == SplitKMode::cluster);
  }
  for (const char* name : {"split64c3", "split64c1", "split64c32", "split64c08", "split64c", "split64c8s", "split1c2", "split64c8@sk"}) {
    GemmLaunchOptions o;
    std::string why;
    CHECK_FALSE_MESSAGE(parse_launch_suffix(name, o, why), name);
  }
  CHECK_FALSE(same_launch(cluster_split_launch(64, 8), cluster_split_launch(64, 4)));
  CHECK(same_launch(cluster_split_launch(64, 8), cluster_split_launch(64, 8)));

  // Layout: one cluster per tile needs nothing; several: a counter per (tile, rank), a partial per cluster.
  CHECK(split_k_layout(64, 64, 32, 64, 8, SplitKMode::cluster, 8).total_bytes == 0);
  const SplitKLayout l = split_k_layout(64, 64, 32, 64, 64, SplitKMode::cluster, 8);
  CHECK(l.semaphore_bytes == 256);  // 2 tiles × 8 ranks × 4 bytes, padded
  CHECK(l.partials_offset == 256);
  CHECK(l.partial_ld == 64);
  CHECK(l.total_bytes == 256 + 8u * 64 * 64 * 4);
  CHECK(split_k_layout(1, 5, 32, 64, 48, SplitKMode::cluster, 16).partial_ld == 8);

  // Proposals: cluster variants for the small-M instance on an sm90 device (cluster dividing the split),
  // none on an sm80 device or for other instances.
  const DeviceInfo dev = h200();
  int clusters = 0;
  for (const GemmLaunchOptions& o : split_k_variants(small, problem(64, 64, 65536), dev)) {
    CHECK(check_launch_options(small, o).ok());
    if (o.split_mode != SplitKMode::cluster) continue;
    ++clusters;
    CHECK(o.split_cluster >= 2);
    CHECK(o.split_k % o.split_cluster == 0);
  }
  CHECK(clusters >= 1);
  DeviceInfo a100 = dev;
  a100.cc = 80;
  for (const GemmLaunchOptions& o : split_k_variants(small, problem(64, 64, 65536), a100)) CHECK(o.split_mode != SplitKMode::cluster);
  for (const GemmLaunchOptions& o : split_k_variants(big, problem(64, 64, 65536), dev)) CHECK(o.split_mode != SplitKMode::cluster);
  // sm90: cooperative warpgroup tiles up to 64x128, as many ranks as rank 0's ring holds partial tiles.
  GemmConfig w;
  w.math = MathOp::wgmma_bf16;
  w.tile = {64, 128, 64};
  w.warp = {64, 128};
  w.stages = 5;
  CHECK(cluster_split_k_limit(w) == 4);  // 5 x 24 KB ring / 32 KB partials = 3 others
  w.tile = {128, 128, 64};
  CHECK(cluster_split_k_limit(w) == 3);  // 160 KB / 64 KB = 2 others
  CHECK_FALSE(cluster_split_k_across_clusters(w));
  w.schedule = WgSchedule::pingpong;
  CHECK(cluster_split_k_limit(w) == 1);
  w.schedule = WgSchedule::cooperative;
  w.tile = {128, 256, 64};
  w.warp = {64, 256};
  CHECK(cluster_split_k_limit(w) == 1);  // 128 accumulators per thread
  CHECK(cluster_split_k_limit(small.config) == 16);
  // Each rank's part of the tile's 4-column groups: contiguous, disjoint, covering the tile once, sizes
  // within one of each other (every small-M tile: 16x128 = 512, 16x64/32x64 = 256/512 groups, 32x128 = 1024).
  for (int quads : {1, 3, 256, 512, 1024})
    for (unsigned ranks = 2; ranks <= static_cast<unsigned>(max_split_cluster); ++ranks) {
      int next = 0, lo = quads, hi = 0;
      for (unsigned r = 0; r < ranks; ++r) {
        const kernel::QuadRange p = kernel::cluster_split_part(quads, r, ranks);
        CHECK(p.first == next);
        CHECK(p.end >= p.first);
        lo = std::min(lo, p.end - p.first);
        hi = std::max(hi, p.end - p.first);
        next = p.end;
      }
      CHECK(next == quads);
      CHECK(hi - lo <= 1);
    }
  CHECK(cluster_split_k_size(64) == 8);
  CHECK(cluster_split_k_size(12) == 4);
  CHECK(cluster_split_k_size(6) == 2);
  CHECK(cluster_split_k_size(7) == 1);
}

TEST_CASE("registered instances: cluster split-K on the sm80 tiles of at most 32 rows and the sm90 cooperative 64x128 warpgroup tiles") {
  int n80 = 0;
  for (const GemmKernelEntry& e : gemm_table().entries()) {
    if (is_route(e)) continue;
    CAPTURE(e.name);
    const int limit = cluster_split_k_limit(e.config);
    if (limit <= 1) {
      CHECK(check_launch_options(e, cluster_split_launch(2, 2)).code() == StatusCode::unsupported);
      continue;
    }
    const GemmDesc d = resolved(ktune::test::problem_for(e.config, 64, 64, 65536));
    GemmOptions opt;
    opt.instance = e.name.data();
    if (is_wgmma(e.config.math)) {  // one cluster per tile, up to what rank 0's ring holds (2..8)
      CHECK(e.config.warp.m * e.config.warp.n <= 64 * 128);
      CHECK(e.config.schedule == WgSchedule::cooperative);
      CHECK(limit <= 8);
      CHECK(check_launch_options(e, cluster_split_launch(limit, limit)).ok());
      CHECK(check_launch_options(e, cluster_split_launch(2 * limit, limit)).code() == StatusCode::unsupported);
      if (limit < 8) CHECK(check_launch_options(e, cluster_split_launch(limit + 1, limit + 1)).code() == StatusCode::unsupported);
      opt.launch = cluster_split_launch(2, 2);
      CHECK(gemm_workspace_size(d, opt) == 0);
      continue;
    }
    ++n80;
    CHECK(limit == 16);
    CHECK((e.family == "sm80_mma_f16_small_m" || e.family == "sm80_mma_f16_small_m32"));
    CHECK(check_launch_options(e, cluster_split_launch(16, 8)).ok());
    opt.launch = cluster_split_launch(64, 8);
    CHECK(gemm_workspace_size(d, opt) == split_k_layout(e.config, d, opt.launch).total_bytes);
    CHECK(gemm_workspace_size(d, opt) > 0);
    opt.launch = cluster_split_launch(8, 8);
    CHECK(gemm_workspace_size(d, opt) == 0);
  }
  CHECK(n80 == 16);
}
