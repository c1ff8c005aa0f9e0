// ktune/epilogue/chunk.cuh — device helpers for epilogues that work on many values at once (the sm90
// kernel's built-in epilogue store, kernel/sm90/epilogue.cuh): the activation chosen once for a whole
// array of values, 4-element operand vectors, and packed 16-bit pairs.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "ktune/epilogue/builtin.cuh"

namespace ktune::epilogue {

// Activation a on N values: one branch per call, each case a straight loop over the values (the form
// the sm90 epilogue uses on a whole chunk of accumulators).
template <int N>
__device__ __forceinline__ void activate(Activation a, float (&v)[N]) {
  switch (a) {
    case Activation::relu:
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = relu(v[i]);
      break;
    case Activation::gelu_tanh:
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = gelu_tanh(v[i]);
      break;
    case Activation::gelu_erf:
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = gelu_erf(v[i]);
      break;
    case Activation::silu:
#pragma unroll
      for (int i = 0; i < N; ++i) v[i] = silu(v[i]);
      break;
    default: break;
  }
}

// Four consecutive elements of T as one aligned vector (8 bytes for 16-bit types, 16 for fp32).
template <class T>
struct alignas(4 * sizeof(T)) Vec4 {
  T e[4];
};

// n (≤ 0 to 4) consecutive elements from src, zero past n: one vector load when `vector` (the caller
// knows src is 4-element aligned) and n == 4, else scalar loads.
template <class T>
__device__ __forceinline__ Vec4<T> load_vec4(const T* src, int n, bool vector) {
  if (vector && n == 4) return *reinterpret_cast<const Vec4<T>*>(src);
  Vec4<T> v;
#pragma unroll
  for (int i = 0; i < 4; ++i) v.e[i] = i < n ? src[i] : from_float<T>(0.0f);
  return v;
}

// dst[0..n) = x converted to T (n ≤ 4): one vector store when `vector` (the caller checked alignment)
// and n == 4, else scalar stores.
template <class T>
__device__ __forceinline__ void store_vec4(T* dst, const float (&x)[4], int n, bool vector) {
  if (n == 4 && vector) {
    Vec4<T> out;
#pragma unroll
    for (int i = 0; i < 4; ++i) out.e[i] = from_float<T>(x[i]);
    *reinterpret_cast<Vec4<T>*>(dst) = out;
  } else {
    for (int i = 0; i < n; ++i) dst[i] = from_float<T>(x[i]);
  }
}

// Two floats as one packed pair of a 16-bit type T (__half2 / __nv_bfloat162, rounded to nearest): the
// 16-bit stores of the sm90 kernel write D's rows from these pairs (lane (g, t) of a wgmma fragment holds
// columns 2t, 2t + 1 of its rows).
template <class T>
__device__ __forceinline__ auto pack2(float x, float y) {
  static_assert(sizeof(T) == 2, "a 16-bit type");
  if constexpr (std::is_same_v<T, __half>) return __floats2half2_rn(x, y);
  else return __floats2bfloat162_rn(x, y);
}

// Eight consecutive 16-bit elements (one 16-byte unit v) to dst, of which the first `left` (≥ 1) lie
// inside D: one vector store when all eight do, else a short loop over the last columns (v picked by
// selects, so it stays in registers).
template <class T>
__device__ __forceinline__ void store_unit16(T* dst, const uint4& v, int left) {
  static_assert(sizeof(T) == 2, "a 16-bit type");
  if (left >= 8) {
    *reinterpret_cast<uint4*>(dst) = v;
    return;
  }
#pragma unroll 1
  for (int k = 0; k < left; ++k) {
    const unsigned w = k < 2 ? v.x : k < 4 ? v.y : k < 6 ? v.z : v.w;
    reinterpret_cast<unsigned short*>(dst)[k] = static_cast<unsigned short>(w >> (16 * (k & 1)));
  }
}

}  // namespace ktune::epilogue
