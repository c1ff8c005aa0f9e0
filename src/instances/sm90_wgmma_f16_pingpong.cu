// ktune::families::Sm90WgmmaF16PingPong (TMA + wgmma f16/bf16, ping-pong consumers), every surviving configuration.
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaF16PingPong, 0, 1)
