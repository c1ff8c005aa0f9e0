// ktune/conv/instantiate.cuh — turn a conv family's surviving configurations into conv dispatch-table
// entries. Only configurations that passed the constraint model are ever named as template arguments.
#pragma once
#include <utility>

#include "ktune/conv/family.hpp"
#include "ktune/conv/kernel/conv_kernel.cuh"
#include "ktune/conv/kernel/sm90_conv.cuh"
#include "ktune/conv/kernel/stem.cuh"

namespace ktune {

// The I-th surviving configuration of conv family F, as a type (see conv2d_fprop_kernel).
template <class F, std::size_t I>
struct ConvFamilyConfig {
  static constexpr ConvConfig value = valid_conv_configs<F>()[I];
  static constexpr ConvInstanceName name = conv_instance_name(value);
};

template <class F, std::size_t I>
ConvKernelEntry make_conv_entry() {
  using Cfg = ConvFamilyConfig<F, I>;
  constexpr ConvIterator it = Cfg::value.iterator;
  if constexpr (it == ConvIterator::gemm1x1 && conv_family_uses_gemm_table<F>())  // the GEMM table's entry
    return ConvKernelEntry{Cfg::name.view(), F::name, Cfg::value, conv_resources(Cfg::value),
                           &kernel::sm90::launch_conv_gemm1x1_table<Cfg>, &kernel::sm90::conv_gemm1x1_table_attributes<Cfg>,
                           &kernel::sm90::conv_gemm1x1_table_entry<Cfg>};
  else if constexpr (it == ConvIterator::gemm1x1)  // the sm90 GEMM kernel itself, compiled here (kernel/sm90_conv.cuh)
    return ConvKernelEntry{Cfg::name.view(), F::name, Cfg::value, conv_resources(Cfg::value),
                           &kernel::sm90::launch_conv_gemm1x1<Cfg>, &kernel::sm90::conv_gemm1x1_attributes<Cfg>};
  else if constexpr (it == ConvIterator::tma_im2col)  // the sm90 GEMM kernel with a TMA im2col producer
    return ConvKernelEntry{Cfg::name.view(), F::name, Cfg::value, conv_resources(Cfg::value),
                           &kernel::sm90::launch_conv_im2col<Cfg>, &kernel::sm90::conv_im2col_attributes<Cfg>};
  else if constexpr (it == ConvIterator::stem)  // first-layer stem: its own persistent kernel (kernel/stem.cuh)
    return ConvKernelEntry{Cfg::name.view(), F::name, Cfg::value, conv_resources(Cfg::value),
                           &kernel::launch_conv_stem<Cfg>, &kernel::conv_stem_attributes<Cfg>};
  else
    return ConvKernelEntry{Cfg::name.view(), F::name, Cfg::value, conv_resources(Cfg::value),
                           &kernel::launch_conv_builtin<Cfg>, &kernel::conv_attributes_of<Cfg>};
}

// Register the survivors with index % Parts == Part.
template <class F, std::size_t Part = 0, std::size_t Parts = 1>
void register_conv_family(ConvTable& table = conv_table()) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (I % Parts == Part) table.add(make_conv_entry<F, I>());
        }(),
        ...);
  }(std::make_index_sequence<conv_valid_count<F>>{});
}

}  // namespace ktune

// Defines a registrar that adds part `part` of `parts` of conv family `fam` at static-initialisation
// time (several may share a translation unit, one per line). Put them in the translation units of the
// program that uses ktune::conv2d (src/instances/conv_*.cu).
#define KTUNE_CONV_CONCAT_(a, b) a##b
#define KTUNE_CONV_CONCAT(a, b) KTUNE_CONV_CONCAT_(a, b)
#define KTUNE_REGISTER_CONV_FAMILY_PART(fam, part, parts)                                      \
  namespace {                                                                                 \
  [[maybe_unused]] const bool KTUNE_CONV_CONCAT(ktune_conv_registered_, __LINE__) =            \
      (::ktune::register_conv_family<fam, part, parts>(), true);                              \
  }
