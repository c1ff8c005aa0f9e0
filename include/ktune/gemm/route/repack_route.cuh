// ktune/gemm/route/repack_route.cuh — the repack route as a dispatch-table entry:
//   route_repack+<inner instance name>
// copies the misaligned operand(s) into aligned scratch (route/repack.cuh, one launch) and runs the
// aligned inner instance on the scratch, storing straight into the user's D (see route/plan.hpp for
// why that is correct). The tuner, ktune-profile and the cost model weigh a route like any instance;
// its time includes the copy.
//
// The inner instance is found by name in gemm_table() when the route is asked to run, so a route
// compiles no GEMM kernel of its own: its translation unit holds only the copy kernel. The inner
// configuration must be one the family instantiates (checked at compile time).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "ktune/dispatch.hpp"
#include "ktune/family.hpp"
#include "ktune/fixed_string.hpp"
#include "ktune/gemm/config.hpp"
#include "ktune/gemm/resource_model.hpp"
#include "ktune/gemm/route/plan.hpp"
#include "ktune/gemm/route/repack.cuh"
#include "ktune/problem.hpp"

namespace ktune::route {

using RouteName = FixedString<112>;

constexpr RouteName repack_route_name(const GemmConfig& inner) {
  RouteName s;
  s.append(repack_prefix).append(instance_name(inner).view());
  return s;
}

// Is `c` one of family F's surviving configurations (so that an instance of that name exists)?
constexpr bool same_config(const GemmConfig& x, const GemmConfig& y) {
  return x.arch_cc == y.arch_cc && x.math == y.math && x.a_layout == y.a_layout && x.b_layout == y.b_layout &&
         x.tile.m == y.tile.m && x.tile.n == y.tile.n && x.tile.k == y.tile.k && x.warp.m == y.warp.m &&
         x.warp.n == y.warp.n && x.stages == y.stages && x.align == y.align;
}

template <class F>
constexpr bool family_instantiates(const GemmConfig& c) {
  for (const GemmConfig& v : valid_configs<F>())
    if (same_config(v, c)) return true;
  return false;
}

namespace detail {
// The workspace of a launch: the caller's (ktune::gemm() passes the pooled one) when the field exists.
template <class Ops>
void* workspace_of(const Ops& ops, std::size_t& bytes) {
  if constexpr (requires { ops.workspace; ops.workspace_bytes; }) {
    bytes = ops.workspace_bytes;
    return ops.workspace;
  } else {
    bytes = 0;
    return nullptr;
  }
}
template <class Ops>
void clear_workspace(Ops& ops) {
  if constexpr (requires { ops.workspace; ops.workspace_bytes; }) {
    ops.workspace = nullptr;
    ops.workspace_bytes = 0;
  }
}
template <class Opt>
int split_k_of(const Opt& o) {
  if constexpr (requires { o.split_k; }) return o.split_k;
  else return 1;
}
}  // namespace detail

template <GemmConfig Inner>
struct RepackRoute {
  static_assert(Inner.operand() == DType::f16 || Inner.operand() == DType::bf16,
                "the repack copy moves 2-byte elements: inner instances are f16/bf16");
  static_assert(Inner.align == repack_vector, "the inner instance loads 16-byte vectors");

  static constexpr InstanceName inner_name = instance_name(Inner);
  static constexpr RouteName name = repack_route_name(Inner);

  static const GemmKernelEntry* inner() { return gemm_table().find(inner_name.view()); }

  // can_implement for the route (replaces the configuration checks of ktune::can_implement).
  static Status implements(const GemmDesc& d, const GemmAlignment& al, const DeviceInfo* dev) {
    if (!math_implements(Inner.math, required_math(d)))
      return error(StatusCode::unsupported, "route's inner instance computes " + std::string(to_string(Inner.math)) +
                                                ", problem needs " + std::string(to_string(required_math(d))));
    if (Inner.a_layout != d.a_layout || Inner.b_layout != d.b_layout)
      return error(StatusCode::unsupported, std::string("route is for layout ") + layout_letter(Inner.a_layout) +
                                                layout_letter(Inner.b_layout) + ", problem is " +
                                                layout_letter(d.a_layout) + layout_letter(d.b_layout));
    const GemmKernelEntry* in = inner();
    if (in == nullptr)
      return error(StatusCode::no_instance,
                   "route's inner instance " + std::string(inner_name.view()) + " is not registered in gemm_table()");
    // The inner instance sees 16-byte-aligned A and B (the scratch, or the operand that was aligned).
    const Status s = can_implement(*in, d, GemmAlignment{repack_vector, repack_vector, al.d}, dev);
    if (!s.ok()) return error(s.code(), "route's inner instance: " + s.message());
    if (!needs_repack(al.a) && !needs_repack(al.b))
      return error(StatusCode::misaligned,
                   "operands already aligned (A allows " + std::to_string(al.a) + "-element vectors, B " +
                       std::to_string(al.b) + "): use the instance directly, without the copy");
    return {};
  }

  static std::size_t workspace_size(const GemmDesc& d, const GemmLaunchOptions&) {
    return repack_workspace_bound(resolved(d));
  }

  static double extra_traffic(const GemmDesc& d) { return repack_traffic_bytes(resolved(d)); }

  static Status launch(const GemmDesc& d0, const GemmOperands& ops, const GemmLaunchOptions& opt, cudaStream_t stream) {
    const GemmDesc d = resolved(d0);
    const GemmKernelEntry* in = inner();
    if (in == nullptr)
      return error(StatusCode::no_instance,
                   "route's inner instance " + std::string(inner_name.view()) + " is not registered in gemm_table()");
    if (detail::split_k_of(opt) > 1)
      return error(StatusCode::unsupported, std::string(name.view()) + " does not split K (split_k=" +
                                                std::to_string(detail::split_k_of(opt)) + ")");
    const RepackPlan plan = plan_repack(d, alignment_of(d, ops));
    std::size_t have = 0;
    void* ws = detail::workspace_of(ops, have);
    bool owned = false;
    if (ws != nullptr && have < plan.workspace_bytes)
      return error(StatusCode::invalid_argument, "workspace too small: " + std::string(name.view()) + " needs " +
                                                     std::to_string(plan.workspace_bytes) + " bytes, got " +
                                                     std::to_string(have));
    if (ws == nullptr && plan.workspace_bytes > 0) {
      // Launched directly (not through ktune::gemm, which passes its pooled workspace): stream-ordered
      // scratch, also capturable in a CUDA graph.
      KTUNE_RETURN_IF_ERROR(cuda_status(cudaMallocAsync(&ws, plan.workspace_bytes, stream), "cudaMallocAsync(route scratch)"));
      owned = true;
    }
    const Status copied = launch_repack(plan, ops.a, ops.b, ws, stream);
    const Status st = !copied.ok() ? copied : [&] {
      GemmDesc di = d;
      GemmOperands oi = ops;
      detail::clear_workspace(oi);
      if (plan.a.repack) {
        di.lda = plan.a.ld;
        oi.a = static_cast<char*>(ws) + plan.a.offset;
      }
      if (plan.b.repack) {
        di.ldb = plan.b.ld;
        oi.b = static_cast<char*>(ws) + plan.b.offset;
      }
      return in->launch(di, oi, opt, stream);
    }();
    if (owned) {
      const Status freed = cuda_status(cudaFreeAsync(ws, stream), "cudaFreeAsync(route scratch)");
      if (st.ok()) return freed;
    }
    return st;
  }

  // The inner kernel's attributes (the copy kernel is small and never spills).
  static cudaError_t attributes(cudaFuncAttributes* a) {
    const GemmKernelEntry* in = inner();
    if (in == nullptr || in->attributes == nullptr) return cudaErrorInvalidDeviceFunction;
    return in->attributes(a);
  }

  static GemmKernelEntry entry() {
    GemmKernelEntry e{};
    e.name = name.view();
    e.family = repack_family;
    e.config = Inner;
    e.resources = estimate_resources(Inner);
    e.launch = &launch;
    e.attributes = &attributes;
    e.implements = &implements;
    e.extra_traffic = &extra_traffic;
    if constexpr (requires { e.workspace_size; }) e.workspace_size = &workspace_size;
    return e;
  }
};

// Register the repack route of every configuration in Inners (each must be instantiated by family F).
template <class F, GemmConfig... Inners>
void register_repack_routes(GemmTable& table = gemm_table()) {
  static_assert((family_instantiates<F>(Inners) && ...), "a route's inner configuration is not an instance of the family");
  (table.add(RepackRoute<Inners>::entry()), ...);
}

}  // namespace ktune::route
