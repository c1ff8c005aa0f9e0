// ktune::families::Sm90WgmmaTf32PingPong (TMA + wgmma tf32, ping-pong consumers): one instance, in its own
// translation unit so that it compiles in parallel with the other sm90 TUs (they are 87-135 s of CPU each).
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm90WgmmaTf32PingPong, 0, 1)
