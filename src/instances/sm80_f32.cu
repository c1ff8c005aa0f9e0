// The fp32-operand sm80 families — ktune::families::Sm80MmaTf32 and Sm80MmaTf32Unaligned (mma.sync tf32)
// and Sm80SimtF32 (FFMA fp32) — every surviving configuration, and the repack routes (ktune/gemm/route/:
// route_repack+<aligned instance> entries for f16/bf16 problems whose A or B rows are not 16-byte
// aligned; only their copy kernel is compiled here).
// Few, large translation units: each one pays ~12 s of CPU (two architectures) to parse ktune's
// headers before its first instance, so the families are split only as far as 2 cores need. (The routes
// had a TU of their own: 27.2 + 14.7 s of CPU apart, 35.7 s together, back to back; the tf32 and SIMT
// families had one each until session 11: 47 + 34 s of CPU in the session-10 CI build.)
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"
#include "ktune/gemm/route/default_routes.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaTf32, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaTf32Unaligned, 0, 1)
KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80SimtF32, 0, 1)

namespace {
[[maybe_unused]] const bool ktune_registered_repack_routes = (ktune::route::register_default_routes(), true);
}
