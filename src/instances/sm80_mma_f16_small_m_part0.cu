// Part 0 of 2 of the small-M (decode) f16/bf16 family (instances are split over translation units so builds run in parallel).
#include "ktune/gemm/families.hpp"
#include "ktune/gemm/instantiate.cuh"

KTUNE_REGISTER_GEMM_FAMILY_PART(ktune::families::Sm80MmaF16SmallM, 0, 2)
