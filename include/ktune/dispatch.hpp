// ktune/dispatch.hpp — the dispatch table: every instantiated kernel, its metadata, whether it can run
// a problem, and how to launch it. Listing and querying work on a host without a GPU.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/arch.hpp"
#include "ktune/gemm/config.hpp"
#include "ktune/gemm/kernel/pdl.hpp"
#include "ktune/gemm/resource_model.hpp"
#include "ktune/gemm/split_k_support.hpp"
#include "ktune/problem.hpp"

namespace ktune {

// How split-K slices are summed (GemmLaunchOptions::split_k > 1):
//   serial   — in the GEMM kernel: every slice stores fp32 partials to the workspace, the last one to
//              arrive at a tile (per-tile semaphore) adds them in slice order and applies the epilogue;
//              deterministic (bit-identical run to run), one kernel.
//   parallel — every slice stores fp32 partials; a second kernel adds them in slice order and applies
//              the epilogue. Also deterministic; no semaphores, two kernels.
//   cluster  — (sm80 small-M instances on sm90 devices: supports_cluster_split_k) the slices run in
//              thread-block clusters of split_cluster CTAs that add their tiles through distributed
//              shared memory (each CTA a part of the tile); with more than one cluster per tile, the
//              last cluster to arrive at each part adds the clusters' sums. Deterministic (ranks, then
//              clusters, in order: not the same bits as serial/parallel), one kernel.
enum class SplitKMode { serial, parallel, cluster };

struct GemmLaunchOptions {
  int raster_group = 8;  // tiles are visited in groups of this many tile-rows, for L2 reuse
  // sm90 (wgmma) instances: CTAs per cluster sharing an operand by TMA multicast, 1 or 2; 0 = the
  // instance's default (currently 1: see kernel/sm90/kernel.cuh). Other instances ignore it.
  int cluster = 0;
  // sm90 (wgmma) instances: at most this many CTAs (the persistent grid walks the tiles); 0 = as many as
  // are resident at once. A larger value than fits is correct, only no longer persistent.
  int max_ctas = 0;
  // Split the K loop into this many slices run by separate blocks (1 = no split). Instances without a
  // workspace_size function support only 1. The epilogue is applied once, to the whole sum.
  int split_k = 1;
  SplitKMode split_mode = SplitKMode::serial;
  // SplitKMode::cluster: CTAs per cluster (2..max_split_cluster, dividing split_k); 1 otherwise.
  int split_cluster = 1;
  // sm90 (wgmma) instances: stream-K tile scheduling (gemm/split_k.hpp, kernel/schedule.cuh): whole
  // waves of tiles data-parallel, the k-iterations of the rest spread evenly over the resident CTAs,
  // split tiles summed in a fixed order through the workspace. Excludes split_k > 1 and cluster = 2.
  bool stream_k = false;
  // Programmatic dependent launch of the GEMM kernel (gemm/kernel/pdl.hpp): `rule` = the env switch
  // (KTUNE_SM90_PDL / KTUNE_SM80_PDL) and the size rule, `on` / `off` = always / never. A per-launch knob
  // because its effect has no size pattern (H200, bf16, sm80 kernel, graph replay: +5-9% at 1x4096x4096,
  // 16x4096x4096, 256³, 64x64x65536; -3 to -9% at 16/32x11008x4096, 512³), so the tuner times both
  // (tactic suffixes @pdl / @nopdl, gemm/tactics.hpp). `on` is ignored (a plain launch) where PDL is
  // impossible: devices below compute capability 9.0, sm80 kernels without an sm_90 image. The split-K
  // reduction kernel is always a plain launch.
  PdlChoice pdl = PdlChoice::rule;
};

// Largest split count accepted (more slices than this never pays: each adds an fp32 tile of traffic).
// One-tile problems with a very long K (64×64×65536) want ~2 slices per multiprocessor.
inline constexpr int max_split_k = 256;
// Largest raster group accepted (as in cached tactics, gemm/tactics.hpp). The kernels' raster math is
// 32-bit and safe for any group: kernel/schedule.cuh clamps it to the grid's height, so group · tiles_n
// never exceeds the tile count, which the launchers keep below 2^31.
inline constexpr int max_raster_group = 1024;

struct GemmKernelEntry {
  std::string_view name;
  std::string_view family;
  GemmConfig config;
  GemmResources resources;  // the constraint model's estimate
  // Launch on `stream`; assumes can_implement() accepted the problem. Returns launch errors.
  Status (*launch)(const GemmDesc&, const GemmOperands&, const GemmLaunchOptions&, cudaStream_t) = nullptr;
  // Compiler's view of the instance (registers, local memory, static smem), for checking the model.
  cudaError_t (*attributes)(cudaFuncAttributes*) = nullptr;
  // Workspace bytes a launch with these options needs (nullptr: the instance never needs any and
  // supports only split_k = 1). `desc` is resolved.
  std::size_t (*workspace_size)(const GemmDesc&, const GemmLaunchOptions&) = nullptr;
  // Routes (gemm/route/): entries that prepare the operands and then run another entry. `implements`
  // replaces can_implement's configuration checks; `extra_traffic` is the memory traffic (bytes) the
  // route adds to its inner instance's, which the cost model charges. Both null for kernel instances.
  Status (*implements)(const GemmDesc&, const GemmAlignment&, const DeviceInfo*) = nullptr;
  double (*extra_traffic)(const GemmDesc&) = nullptr;
};

// Is this entry a route (gemm/route/: operands prepared, then another entry runs) or a kernel instance?
inline bool is_route(const GemmKernelEntry& e) { return e.implements != nullptr; }

// The ranges of the launch options a caller may set, whatever the instance: out of range is an
// invalid argument, never clamped silently (ktune::gemm checks them before it tunes or launches).
inline Status check_launch_option_ranges(const GemmLaunchOptions& o) {
  if (o.split_k < 1 || o.split_k > max_split_k)
    return error(StatusCode::invalid_argument, "split_k must be in [1, " + std::to_string(max_split_k) + "], got " +
                                                   std::to_string(o.split_k));
  if (o.split_mode != SplitKMode::serial && o.split_mode != SplitKMode::parallel && o.split_mode != SplitKMode::cluster)
    return error(StatusCode::invalid_argument,
                 "unknown split_mode (SplitKMode value " + std::to_string(static_cast<int>(o.split_mode)) + ")");
  if (o.split_k > 1 && o.split_mode == SplitKMode::cluster) {
    if (o.split_cluster < 2 || o.split_cluster > max_split_cluster || o.split_k % o.split_cluster != 0)
      return error(StatusCode::invalid_argument, "cluster split-K needs split_cluster in [2, " + std::to_string(max_split_cluster) +
                                                     "] dividing split_k=" + std::to_string(o.split_k) + ", got " +
                                                     std::to_string(o.split_cluster));
  } else if (o.split_cluster != 1) {
    return error(StatusCode::invalid_argument, "split_cluster=" + std::to_string(o.split_cluster) +
                                                   " needs split_k > 1 with split_mode = SplitKMode::cluster");
  }
  // The other knobs a caller may set: out of range is an error, never clamped silently.
  if (o.raster_group < 1 || o.raster_group > max_raster_group)
    return error(StatusCode::invalid_argument, "raster_group must be in [1, " + std::to_string(max_raster_group) +
                                                   "], got " + std::to_string(o.raster_group));
  if (o.cluster < 0 || o.cluster > 2)
    return error(StatusCode::invalid_argument, "cluster must be 0 (the instance's default), 1 or 2, got " +
                                                   std::to_string(o.cluster));
  if (o.max_ctas < 0)
    return error(StatusCode::invalid_argument, "max_ctas must not be negative (0: as many as are resident), got " +
                                                   std::to_string(o.max_ctas));
  if (o.stream_k && o.split_k > 1)
    return error(StatusCode::invalid_argument, "stream_k and split_k > 1 exclude each other (split_k=" + std::to_string(o.split_k) + ")");
  if (o.pdl != PdlChoice::rule && o.pdl != PdlChoice::on && o.pdl != PdlChoice::off)
    return error(StatusCode::invalid_argument, "unknown pdl (PdlChoice value " + std::to_string(static_cast<int>(o.pdl)) + ")");
  return {};
}

// Launch options this instance accepts for this problem (checked before anything is launched). `pdl` is
// accepted by every entry: both GEMM launchers honour it where PDL is possible and launch plainly
// elsewhere (GemmLaunchOptions::pdl); a route passes it to its inner instance's launch.
inline Status check_launch_options(const GemmKernelEntry& e, const GemmLaunchOptions& o) {
  KTUNE_RETURN_IF_ERROR(check_launch_option_ranges(o));
  if (o.split_k > 1 && (e.workspace_size == nullptr || is_route(e)))  // a route's workspace holds its copies
    return error(StatusCode::unsupported, "instance " + std::string(e.name) + " does not support split-K (split_k=" +
                                              std::to_string(o.split_k) + ")");
  if (o.split_k > 1 && o.split_mode == SplitKMode::cluster) {
    if (o.split_cluster > cluster_split_k_limit(e.config))
      return error(StatusCode::unsupported, "instance " + std::string(e.name) + " takes cluster split-K with clusters of up to " +
                                                std::to_string(cluster_split_k_limit(e.config)) + " CTAs (1: none), got " +
                                                std::to_string(o.split_cluster));
    if (o.split_k != o.split_cluster && !cluster_split_k_across_clusters(e.config))
      return error(StatusCode::unsupported, "instance " + std::string(e.name) + " takes cluster split-K with one cluster per tile only "
                                                "(split_k == split_cluster), got split_k=" + std::to_string(o.split_k));
  }
  if (o.cluster == 2 && !supports_clusters(e.config))
    return error(StatusCode::unsupported, "instance " + std::string(e.name) + " (swap AB) does not run in clusters (cluster=2)");
  if (o.stream_k && (!supports_stream_k(e.config) || e.workspace_size == nullptr || is_route(e)))
    return error(StatusCode::unsupported, "instance " + std::string(e.name) +
                                              " does not support stream-K (sm90 wgmma instances with warpgroup tiles up to 64x128)");
  return {};
}

// Workspace bytes this instance needs for this (resolved) problem and launch options.
inline std::size_t workspace_bytes_for(const GemmKernelEntry& e, const GemmDesc& d, const GemmLaunchOptions& o) {
  return e.workspace_size != nullptr ? e.workspace_size(d, o) : 0;
}

// The caller's workspace against what the launch needs: too small (or misaligned) is an error.
inline Status check_workspace(const GemmKernelEntry& e, const GemmDesc& d, const GemmOperands& ops,
                              const GemmLaunchOptions& o) {
  const std::size_t need = workspace_bytes_for(e, d, o);
  if (need == 0) return {};
  if (ops.workspace == nullptr || ops.workspace_bytes < need)
    return error(StatusCode::invalid_argument,
                 "workspace too small: instance " + std::string(e.name) + " with split_k=" + std::to_string(o.split_k) +
                     " needs " + std::to_string(need) + " bytes, got " +
                     (ops.workspace == nullptr ? std::string("none") : std::to_string(ops.workspace_bytes)));
  if (reinterpret_cast<std::uintptr_t>(ops.workspace) % 16 != 0)
    return error(StatusCode::misaligned, "workspace must be 16-byte aligned");
  return {};
}

// Can this device run an instance of this configuration (GEMM or a conv's implicit GEMM)? Architecture
// and shared memory only; no device (nullptr) admits everything.
inline Status device_runs(const GemmConfig& c, const GemmResources& r, const DeviceInfo* dev) {
  if (dev == nullptr) return {};
  // sm_90a code (wgmma, setmaxnreg) runs on compute capability 9.0 only, not on later architectures.
  if (is_wgmma(c.math) && dev->cc != 90)
    return error(StatusCode::no_instance, "instance needs sm90a (compute capability 9.0 exactly), device is sm" + std::to_string(dev->cc));
  if (dev->cc < c.arch_cc)
    return error(StatusCode::no_instance, "instance needs sm" + std::to_string(c.arch_cc) + ", device is sm" + std::to_string(dev->cc));
  if (r.smem_bytes > dev->smem_optin_bytes)
    return error(StatusCode::no_instance, "instance needs " + std::to_string(r.smem_bytes) +
                                              " B shared memory, device allows " + std::to_string(dev->smem_optin_bytes));
  return {};
}

// What a swap-AB instance (WgSchedule::swap_ab; kernel/sm90/kernel.cuh) runs, beyond its configuration's
// math and layout ('tn' f16/bf16): the transposed store (kernel/sm90/epilogue.cuh, store_tile_swapped)
// writes 16-bit D only; it applies the whole built-in epilogue (alpha, beta·C, bias, residual, every
// activation, clamp). M, N and K fit int (the kernel's coordinates). Shared by ktune::gemm's
// can_implement, the conv gemm1x1 route's, and the launcher (check_swap_ab), so nothing is launched that
// the kernel cannot run. (Split-K, stream-K and clusters: check_launch_options.)
inline Status swap_ab_implements(const GemmDesc& d) {
  if (d.a_layout != Layout::row || d.b_layout != Layout::col)
    return error(StatusCode::unsupported, "swap-AB instance: 'tn' only (row-major A, column-major B)");
  if (d.ab_type != DType::f16 && d.ab_type != DType::bf16)
    return error(StatusCode::unsupported, "swap-AB instance: f16/bf16 operands only");
  if (d.d_type != DType::f16 && d.d_type != DType::bf16)
    return error(StatusCode::unsupported, "swap-AB instance: 16-bit D (and C, bias, residual) only, problem has " +
                                              std::string(to_string(d.d_type)) + " D (its transposed store packs 16-bit values)");
  if (d.m > 0x7fffffff || d.n > 0x7fffffff || d.k > 0x7fffffff)
    return error(StatusCode::invalid_argument, "swap-AB instance: M, N, K must fit int");
  return {};
}

// Can this instance run this (already validated) problem on this device? The reason says why not.
inline Status can_implement(const GemmKernelEntry& e, const GemmDesc& d, const GemmAlignment& al,
                            const DeviceInfo* dev) {
  if (e.implements != nullptr) return e.implements(d, al, dev);
  const GemmConfig& c = e.config;
  if (!math_implements(c.math, required_math(d)))
    return error(StatusCode::unsupported, "instance computes " + std::string(to_string(c.math)) + ", problem needs " +
                                              std::string(to_string(required_math(d))));
  if (c.a_layout != d.a_layout || c.b_layout != d.b_layout)
    return error(StatusCode::unsupported, "instance is for layout " + std::string(1, layout_letter(c.a_layout)) +
                                              layout_letter(c.b_layout) + ", problem is " + layout_letter(d.a_layout) +
                                              layout_letter(d.b_layout));
  if (is_wgmma(c.math) && (al.a % c.align != 0 || al.b % c.align != 0))
    return error(StatusCode::misaligned, "instance loads A and B with TMA, which needs 16-byte aligned base addresses, "
                                         "leading dimensions and contiguous extents (" + std::to_string(c.align) +
                                             "-element vectors): A allows " + std::to_string(al.a) + ", B allows " +
                                             std::to_string(al.b));
  if (al.a % c.align != 0 || al.b % c.align != 0)
    return error(StatusCode::misaligned, "instance needs " + std::to_string(c.align) + "-element vectors, A allows " +
                                             std::to_string(al.a) + ", B allows " + std::to_string(al.b));
  if (is_swap_ab(c)) KTUNE_RETURN_IF_ERROR(swap_ab_implements(d));
  return device_runs(c, e.resources, dev);
}

// A dispatch table: the instances registered during static initialisation, found by name or by the
// problem they can implement (can_implement(entry, desc, alignment, device), found by ADL: the GEMM one
// above, the conv one in conv/dispatch.hpp).
template <class Entry, class Desc, class Alignment>
class KernelTable {
 public:
  void add(const Entry& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::none_of(entries_.begin(), entries_.end(), [&](const Entry& x) { return x.name == e.name; }))
      entries_.push_back(e);
  }
  // Entries are only added during static initialisation, so reading needs no lock afterwards.
  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }

  const Entry* find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  // Entries that accept the problem; `why_not` (optional) collects one line per rejected entry.
  std::vector<const Entry*> candidates(const Desc& d, const Alignment& al, const DeviceInfo* dev,
                                       std::vector<std::string>* why_not = nullptr) const {
    std::vector<const Entry*> out;
    for (const auto& e : entries_) {
      Status s = can_implement(e, d, al, dev);
      if (s.ok())
        out.push_back(&e);
      else if (why_not != nullptr)
        why_not->push_back(std::string(e.name) + ": " + s.message());
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<Entry> entries_;
};

using GemmTable = KernelTable<GemmKernelEntry, GemmDesc, GemmAlignment>;

// The process-wide table that instance headers register into (see gemm/instances/).
inline GemmTable& gemm_table() {
  static GemmTable table;
  return table;
}

}  // namespace ktune
