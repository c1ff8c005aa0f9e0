// Repack routes (ktune/gemm/route/): route_repack+<aligned instance> entries for f16/bf16 problems
// whose A or B rows are not 16-byte aligned. Only the copy kernel is compiled here.
#include "ktune/gemm/route/default_routes.cuh"

namespace {
[[maybe_unused]] const bool ktune_registered_repack_routes = (ktune::route::register_default_routes(), true);
}
