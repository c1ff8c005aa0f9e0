// bench_splitk — decode-shaped GEMMs (M = 1, 16, 32 times Llama-sized weight matrices, bf16 'tn': A is
// M×K row-major, B is given as N×K) and 64×64×65536: ktune's best (instance × split-K launch option)
// against cuBLASLt's default heuristic, same data, same process. CUDA-graph replay, median of repeats,
// operand sets rotated so that the weights are not served from L2. Prints µs, TF/s, GB/s (bytes of A,
// B and D once) against the 4.25 TB/s device copy ceiling, the ratio and the geomean over the decode
// shapes; then, per shape, the fastest tactics and where split_k_variants' picks rank.
//
//   ktune_bench_bench_splitk [--quick] [--top N] [--sweep] [--shape MxNxK] [--filter A|B|...] [--tuned]
// --sweep times every split count in {1..8, 10, 12, 16, ..., 256} × both modes (not just
// split_k_variants'); --filter keeps instances whose name contains one of the '|'-separated parts;
// --tuned also times ktune::gemm() as a user calls it (the tuner's pick, tuned before timing);
// --raster G runs every tactic with raster group G (tiles visited in groups of G tile rows; 1: row by row);
// --store-ab times the top tactics again on M - 8 rows with ldd = N + 8 and N + 4 (the sm90 identity
// store's 16-byte row-segment form against its staged form, same D buffers);
// --sk also times the stream-K tactic (@sk) of every instance that takes it ([proposed] where
// launch_variants would time it);
// --cluster also times cluster split-K (@split<N>c<C>) with every cluster size 4, 8, 16 (2 up to 8 slices)
// dividing N in {2, 4, ..., 256} on the sm80 instances that take it, @split<C>c<C> up to the instance's
// limit on the sm90 ones (sm90 devices);
// --variants also times every launch_variants() option (cluster of 2, stream-K, raster group);
// --only T1,T2,... keeps only the tactics of those names (of the ones the other flags select);
// --benchmark_* arguments (scripts/gpu-check.sh) mean --quick (2 shapes, small-tile instances).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/gpu_harness.cuh"
#include "common/problem_spec.hpp"
#include "ktune/gemm.hpp"
#include "ktune/gemm/split_k.hpp"
#include "ktune/gemm/tactics.hpp"

using namespace ktune;
using namespace ktune::tools;

namespace {

constexpr double kCopyCeilingGBs = 4250.0;  // measured device-to-device copy on the H200 (ANCHORS.md)

struct Tactic {
  const GemmKernelEntry* e;
  GemmLaunchOptions lo;
  bool proposed;  // one of split_k_variants()
  double ms = 0;
  std::string name() const { return tactic_name(e->name, lo); }
};

struct Row {
  std::string shape;
  double cublas_ms = 0, ktune_ms = 0, flops = 0, bytes = 0;
  std::string best;
  bool decode = false;
};

int fail(const Status& s, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, sweep = false, tuned = false, store_ab = false, streamk = false, cluster = false, variants = false;
  std::string only_tactics;
  int top = 5, raster = 0;
  std::string only, filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick" || a.rfind("--benchmark", 0) == 0) quick = true;
    else if (a == "--sweep") sweep = true;
    else if (a == "--top" && i + 1 < argc) top = std::atoi(argv[++i]);
    else if (a == "--shape" && i + 1 < argc) only = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--tuned") tuned = true;
    else if (a == "--sk") streamk = true;
    else if (a == "--cluster") cluster = true;
    else if (a == "--only" && i + 1 < argc) only_tactics = argv[++i];
    else if (a == "--store-ab") store_ab = true;
    else if (a == "--variants") variants = true;
    else if (a == "--raster" && i + 1 < argc) raster = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--sweep] [--top N] [--shape MxNxK] [--filter A|B|...] [--tuned] [--store-ab] [--raster G] [--sk] [--cluster] [--variants] [--only T1,T2]\n", argv[0]);
      return 2;
    }
  }
  if (cuda_device_count() == 0) {
    std::printf("bench_splitk: no CUDA device found - SKIPPED\n");
    return 0;
  }
  DeviceInfo dev;
  if (Status s = current_device(dev); !s.ok()) return fail(s, "device");
  std::printf("bench_splitk on %s (sm%d, %d SMs, L2 %d MB), commit %s\n", dev.name.c_str(), dev.cc, dev.sm_count,
              dev.l2_bytes >> 20, KTUNE_GIT_COMMIT);

  struct Shape { std::int64_t m, n, k; bool decode; };
  std::vector<Shape> shapes;
  for (std::int64_t m : {1, 16, 32})
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {11008, 4096}, {4096, 11008}, {28672, 8192}})
      shapes.push_back({m, n, k, true});
  shapes.push_back({64, 64, 65536, false});
  if (quick) {
    shapes = {{16, 4096, 4096, true}, {64, 64, 65536, false}};
    if (filter.empty()) filter = "_w16x32|_64x64x64_";  // the small-M and small-tile families
  }
  std::vector<std::string> filters;
  for (std::size_t pos = 0; !filter.empty() && pos <= filter.size();) {
    const std::size_t bar = std::min(filter.find('|', pos), filter.size());
    if (bar > pos) filters.push_back(filter.substr(pos, bar - pos));
    pos = bar + 1;
  }
  if (!only.empty()) {
    std::int64_t m, n, k;
    if (!parse_mnk(only, m, n, k)) return 2;
    shapes = {{m, n, k, m <= 64}};
  }

  cudaStream_t s = nullptr;
  if (Status st = cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream"); !st.ok()) return fail(st, "stream");
  CublasRef cublas;
  if (Status st = cublas.init(); !st.ok()) return fail(st, "cuBLAS");
  TimingOptions topt;
  topt.target_ms_per_repeat = quick ? 1.0 : 3.0;
  topt.repeats = quick ? 3 : 7;
  TimingOptions kopt = topt;
  kopt.repeats = quick ? 3 : 5;
  kopt.target_ms_per_repeat = quick ? 1.0 : 2.0;

  DeviceBuffer workspace;
  std::vector<Row> rows;
  // What serial split-K's in-stream counter reset costs by itself: a graph of 256-byte memsets.
  {
    DeviceBuffer tiny;
    if (Status st = tiny.allocate(256); !st.ok()) return fail(st, "memset buffer");
    Timing tm;
    const LaunchFn fn = [&](int, cudaStream_t st) { return cuda_status(cudaMemsetAsync(tiny.get(), 0, 256, st), "memset"); };
    if (Status st = time_launches(fn, s, topt, tm); st.ok())
      std::printf("a 256-byte cudaMemsetAsync in a CUDA graph: %.2f us per node\n", tm.median_ms * 1e3);
  }
  for (const Shape& sh : shapes) {
    const ProblemSpec spec = make_problem(sh.m, sh.n, sh.k, Precision::bf16, "tn");
    ProblemData data;
    if (Status st = data.create(spec, dev, 1234, s); !st.ok()) return fail(st, "data");
    const GemmDesc d = data.desc();
    Row row;
    row.shape = spec.shape_name();
    row.decode = sh.decode;
    row.flops = 2.0 * d.m * d.n * d.k;
    row.bytes = data.bytes_per_set();

    // cuBLASLt (default heuristic), and its output on set 0 as the reference.
    std::unique_ptr<CublasRef::Plan> plan;
    if (Status st = cublas.make_plan(spec, nullptr, plan); !st.ok()) return fail(st, "cuBLAS plan");
    const GemmOperands o0 = data.ops(0);
    if (Status st = cublas.run(*plan, o0.a, o0.b, data.ref(), s); !st.ok()) return fail(st, "cuBLAS run");
    Timing tc;
    const LaunchFn cub = [&](int i, cudaStream_t st) {
      const GemmOperands o = data.ops(i);
      return cublas.run(*plan, o.a, o.b, o.d, st);
    };
    if (Status st = time_launches(cub, s, topt, tc); !st.ok()) return fail(st, "cuBLAS timing");
    row.cublas_ms = tc.median_ms;

    // ktune: every instance that takes the problem × its launch variants (or the sweep).
    std::vector<Tactic> tactics;
    const GemmAlignment al = alignment_of(d, o0);
    for (const GemmKernelEntry* e : gemm_table().candidates(d, al, &dev)) {
      if (!filters.empty() && std::none_of(filters.begin(), filters.end(), [&](const std::string& f) {
            return e->name.find(f) != std::string_view::npos;
          }))
        continue;
      const std::vector<GemmLaunchOptions> proposed = split_k_variants(*e, d, dev);
      auto is_proposed = [&](const GemmLaunchOptions& lo) {
        return std::any_of(proposed.begin(), proposed.end(), [&](const GemmLaunchOptions& p) {
          return p.split_k == lo.split_k && (lo.split_k == 1 || (p.split_mode == lo.split_mode && p.split_cluster == lo.split_cluster));
        });
      };
      std::vector<GemmLaunchOptions> los = proposed;
      if (sweep && e->workspace_size != nullptr) {
        los.clear();
        const std::int64_t k_tiles = (d.k + e->config.tile.k - 1) / e->config.tile.k;
        for (int sk : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256})
          for (SplitKMode mode : {SplitKMode::serial, SplitKMode::parallel}) {
            if ((sk == 1 && mode == SplitKMode::parallel) || sk > k_tiles) continue;
            GemmLaunchOptions lo;
            lo.split_k = sk;
            lo.split_mode = mode;
            los.push_back(lo);
          }
      }
      if (cluster && supports_cluster_split_k(e->config) && dev.cc >= 90) {  // cluster mode: every size dividing the split
        const std::int64_t k_tiles = (d.k + e->config.tile.k - 1) / e->config.tile.k;
        for (int sk : {2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256})
          for (int cl : {2, 4, 8, 16}) {
            if (sk % cl != 0 || sk > k_tiles || (cl == 2 && sk > 8) || cl > cluster_split_k_limit(e->config)) continue;
            if (!cluster_split_k_across_clusters(e->config) && sk != cl) continue;  // sm90: one cluster per tile
            GemmLaunchOptions lo;
            lo.split_k = sk;
            lo.split_mode = SplitKMode::cluster;
            lo.split_cluster = cl;
            if (std::none_of(los.begin(), los.end(), [&](const GemmLaunchOptions& x) { return same_launch(x, lo); })) los.push_back(lo);
          }
      }
      if (variants)  // --variants: every launch variant the tuner times (cluster of 2, stream-K, raster)
        for (const GemmLaunchOptions& lo : launch_variants(*e, d, dev))
          if (std::none_of(los.begin(), los.end(), [&](const GemmLaunchOptions& x) { return same_launch(x, lo); })) los.push_back(lo);
      if (streamk && supports_stream_k(e->config)) {
        GemmLaunchOptions lo;
        lo.stream_k = true;
        los.push_back(lo);
      }
      for (auto lo : los) {
        const bool prop = lo.stream_k ? stream_k_worth_timing(e->config, e->resources, d, dev) : is_proposed(lo);
        if (raster > 0) lo.raster_group = raster;
        tactics.push_back({e, lo, prop});
      }
    }
    if (!only_tactics.empty())  // --only: the named tactics alone (e.g. under ncu)
      tactics.erase(std::remove_if(tactics.begin(), tactics.end(), [&](const Tactic& t) {
                      return ("," + only_tactics + ",").find("," + t.name() + ",") == std::string::npos;
                    }), tactics.end());
    std::size_t ws_need = 0;
    for (const Tactic& t : tactics) ws_need = std::max(ws_need, workspace_bytes_for(*t.e, d, t.lo));
    if (ws_need > workspace.bytes())
      if (Status st = workspace.allocate(ws_need); !st.ok()) return fail(st, "workspace");
    // One tactic (instance + launch options) through ktune::gemm on `desc`, with the shared workspace.
    const auto tactic_launch = [&](const Tactic& t, const GemmDesc& desc) -> LaunchFn {
      return [&data, &workspace, &t, desc](int i, cudaStream_t st) {
        GemmOperands o = data.ops(i);
        o.workspace = workspace.get();
        o.workspace_bytes = workspace.bytes();
        GemmOptions opt;
        opt.instance = t.e->name.data();
        opt.launch = t.lo;
        return gemm(desc, o, st, opt);
      };
    };
    for (Tactic& t : tactics) {
      const LaunchFn fn = tactic_launch(t, d);
      Timing tk;
      if (Status st = time_launches(fn, s, kopt, tk); !st.ok()) {
        std::printf("  %s: %s\n", t.name().c_str(), st.to_string().c_str());
        t.ms = 1e30;
        continue;
      }
      t.ms = tk.median_ms;
    }
    std::sort(tactics.begin(), tactics.end(), [](const Tactic& a, const Tactic& b) { return a.ms < b.ms; });
    if (tactics.empty() || tactics[0].ms >= 1e29) {
      std::printf("%s: no ktune tactic ran\n", row.shape.c_str());
      continue;
    }
    const Tactic& best = tactics[0];
    row.ktune_ms = best.ms;
    row.best = best.name();

    // Correctness of the winner on set 0 against cuBLAS.
    {
      GemmOperands o = data.ops(0);
      o.workspace = workspace.get();
      o.workspace_bytes = workspace.bytes();
      GemmOptions opt;
      opt.instance = best.e->name.data();
      opt.launch = best.lo;
      (void)data.poison(0, s);
      ErrorStats es;
      Status st = gemm(d, o, s, opt);
      if (st.ok()) (void)(st = data.error_vs_ref(o.d, s, es));
      std::printf("%s: best %s, rel. error vs cuBLAS %.2e %s\n", row.shape.c_str(), row.best.c_str(), es.rel,
                  st.ok() && es.passes(2e-2) ? "ok" : ("FAILED " + st.to_string()).c_str());
    }
    int rank = 1;
    for (const Tactic& t : tactics) {
      if (rank <= top || (t.proposed && rank <= 50))
        std::printf("   #%-3d %-62s %8.2f us %7.1f GB/s%s\n", rank, t.name().c_str(), t.ms * 1e3, row.bytes / (t.ms * 1e-3) / 1e9,
                    t.proposed ? "  [proposed]" : "");
      ++rank;
    }
    if (store_ab) {
      // The store path's A/B on the fastest tactics: M - 8 rows into the same D buffers with ldd = N + 8
      // (16-bit D: 16-byte aligned rows, the sm90 16-byte row-segment store) and ldd = N + 4 (rows only
      // 8-byte aligned: the staged fp32 store with 8-byte vectors). Same bytes within 0.1%.
      int shown = 0;
      for (const Tactic& t : tactics) {
        if (shown++ >= top || t.ms >= 1e29) break;
        for (int pad : {8, 4}) {
          GemmDesc d2 = d;
          d2.m = d.m - 8;
          d2.ldd = d.n + pad;
          if (d2.m < 1 || d2.m * d2.ldd > data.d_elems()) continue;
          const LaunchFn fn = tactic_launch(t, d2);
          Timing tk;
          if (Status st = time_launches(fn, s, kopt, tk); !st.ok()) {
            std::printf("   store A/B %s ldd N+%d: %s\n", t.name().c_str(), pad, st.to_string().c_str());
            continue;
          }
          std::printf("   store A/B %-62s M-8, ldd N+%d: %8.2f us %7.1f GB/s\n", t.name().c_str(), pad, tk.median_ms * 1e3,
                      row.bytes / (tk.median_ms * 1e-3) / 1e9);
        }
      }
    }
    if (tuned) {
      // ktune::gemm() as a user calls it: the first call tunes (outside the timing), then graph replays.
      GemmOperands o1 = data.ops(1);
      Status st = gemm(d, o1, s);
      if (st.ok()) (void)(st = cuda_status(cudaStreamSynchronize(s), "tuning run"));
      Timing tt;
      const LaunchFn fn = [&](int i, cudaStream_t st2) { return gemm(d, data.ops(i), st2); };
      if (st.ok()) (void)(st = time_launches(fn, s, kopt, tt));
      const GemmTactic* pick = nullptr;
      if (st.ok()) (void)default_tuner().select(d, o1, s, pick);
      if (st.ok())
        std::printf("   ktune::gemm() (tuner's pick %s): %.2f us, %.2fx cuBLAS\n", pick ? pick->name.c_str() : "?",
                    tt.median_ms * 1e3, row.cublas_ms / tt.median_ms);
      else
        std::printf("   ktune::gemm(): %s\n", st.to_string().c_str());
    }
    std::printf("=> %s: cuBLAS %.2f us, ktune %.2f us (%.0f GB/s, %.0f%% of copy), %.2fx, %s\n", row.shape.c_str(),
                row.cublas_ms * 1e3, row.ktune_ms * 1e3, row.bytes / (row.ktune_ms * 1e-3) / 1e9,
                100.0 * row.bytes / (row.ktune_ms * 1e-3) / 1e9 / kCopyCeilingGBs, row.cublas_ms / row.ktune_ms, row.best.c_str());
    rows.push_back(row);
    std::fflush(stdout);
  }

  std::printf("\n%-20s %10s %10s %9s %9s %9s %7s %7s  %s\n", "shape (bf16 tn)", "cuBLAS us", "ktune us", "cuBLAS TF",
              "ktune TF", "ktune GB/s", "%copy", "ratio", "best tactic");
  double log_sum = 0;
  int n_decode = 0;
  for (const Row& r : rows) {
    const double gbs = r.bytes / (r.ktune_ms * 1e-3) / 1e9, ratio = r.cublas_ms / r.ktune_ms;
    std::printf("%-20s %10.2f %10.2f %9.1f %9.1f %9.0f %6.0f%% %7.2f  %s\n", r.shape.c_str(), r.cublas_ms * 1e3,
                r.ktune_ms * 1e3, tflops(r.flops, r.cublas_ms), tflops(r.flops, r.ktune_ms), gbs,
                100.0 * gbs / kCopyCeilingGBs, ratio, r.best.c_str());
    if (r.decode) {
      log_sum += std::log(ratio);
      ++n_decode;
    }
  }
  if (n_decode > 0) std::printf("decode geomean ktune/cuBLAS speedup: %.3f over %d shapes (target 1.5)\n", std::exp(log_sum / n_decode), n_decode);
  cudaStreamDestroy(s);
  return 0;
}
