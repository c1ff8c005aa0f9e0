// ktune/gemm/instantiate.cuh — turn a family's surviving configurations into dispatch-table entries.
// Only configurations that passed the constraint model are ever named as template arguments.
#pragma once
#include <utility>

#include "ktune/family.hpp"
#include "ktune/gemm/kernel/gemm_kernel.cuh"
#include "ktune/gemm/kernel/sm90/kernel.cuh"

namespace ktune {

// The I-th surviving configuration of family F, as a type (see gemm_kernel).
template <class F, std::size_t I>
struct FamilyConfig {
  static constexpr GemmConfig value = valid_configs<F>()[I];
  static constexpr InstanceName name = instance_name(value);
};

template <class F, std::size_t I>
GemmKernelEntry make_entry() {
  using Cfg = FamilyConfig<F, I>;
  if constexpr (is_swap_ab(Cfg::value))  // Hopper, transposed problem: no workspace (no split-K or stream-K)
    return GemmKernelEntry{Cfg::name.view(), F::name, Cfg::value, estimate_resources(Cfg::value),
                           &kernel::sm90::launch_builtin<Cfg>, &kernel::sm90::attributes_of<Cfg>, nullptr};
  else if constexpr (is_wgmma(Cfg::value.math))  // Hopper: TMA + wgmma, warp-specialized (kernel/sm90/)
    return GemmKernelEntry{Cfg::name.view(), F::name, Cfg::value, estimate_resources(Cfg::value),
                           &kernel::sm90::launch_builtin<Cfg>, &kernel::sm90::attributes_of<Cfg>,
                           &kernel::sm90::workspace_size_of<Cfg>};
  else
    return GemmKernelEntry{Cfg::name.view(), F::name, Cfg::value, estimate_resources(Cfg::value),
                           &kernel::launch_builtin<Cfg>, &kernel::attributes_of<Cfg>, kernel::workspace_size_fn<Cfg>()};
}

// Register the survivors with index % Parts == Part (so one family can be split over translation
// units to keep builds parallel).
template <class F, std::size_t Part = 0, std::size_t Parts = 1>
void register_family(GemmTable& table = gemm_table()) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (I % Parts == Part) table.add(make_entry<F, I>());
        }(),
        ...);
  }(std::make_index_sequence<valid_count<F>>{});
}

}  // namespace ktune

// Defines a registrar that adds part `part` of `parts` of family `fam` at static-initialisation time.
// Any number of them may share a translation unit (one per line); spread the parts of a large family
// over TUs to compile them in parallel.
#define KTUNE_GEMM_CONCAT_(a, b) a##b
#define KTUNE_GEMM_CONCAT(a, b) KTUNE_GEMM_CONCAT_(a, b)
#define KTUNE_REGISTER_GEMM_FAMILY_PART(fam, part, parts)                                          \
  namespace {                                                                                     \
  [[maybe_unused]] const bool KTUNE_GEMM_CONCAT(ktune_registered_, __LINE__) =                     \
      (::ktune::register_family<fam, part, parts>(), true);                                       \
  }
