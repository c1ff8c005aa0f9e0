// ktune/epilogue/builtin.cuh — device side of the epilogues.
//
// The epilogue concept: a type E with
//   struct Params { ... };                                // trivially copyable, lives in kernel params
//   template <class TOut> __device__ static void apply(const Params&, int row, int col, float* v, int n);
// `apply` transforms n (1 to 4) consecutive accumulator values of row `row`, columns col..col+n-1, in
// place (n ≤ 4); the kernel then converts them to TOut and stores them to D. Every epilogue runs inside the
// GEMM kernel: no extra pass over memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ktune/epilogue/spec.hpp"
#include "ktune/types.hpp"

namespace ktune::epilogue {

template <class T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Activations, one function each; `apply_activation` picks one at run time.
__device__ __forceinline__ float relu(float x) { return fmaxf(x, 0.0f); }
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

__device__ __forceinline__ float apply_activation(Activation a, float x) {
  switch (a) {
    case Activation::relu: return relu(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
    case Activation::gelu_erf: return gelu_erf(x);
    case Activation::silu: return silu(x);
    default: return x;
  }
}

// The run-time-composed epilogue behind EpilogueSpec:
//   v = act(alpha·acc + beta·C + bias[col] + residual[row, col]), then clamp.
struct Builtin {
  struct Params {
    float alpha = 1.0f, beta = 0.0f;
    const void* c = nullptr;
    std::int64_t ldc = 0;
    const void* bias = nullptr;      // null: no bias
    const void* residual = nullptr;  // null: no residual
    std::int64_t ldr = 0;
    Activation activation = Activation::none;
    bool clamp = false;
    float clamp_lo = 0.0f, clamp_hi = 0.0f;
  };

  template <class TOut>
  __device__ __forceinline__ static void apply(const Params& p, int row, int col, float* v, int n) {
    const TOut* c = p.beta != 0.0f ? static_cast<const TOut*>(p.c) + static_cast<std::int64_t>(row) * p.ldc + col : nullptr;
    const TOut* r = p.residual ? static_cast<const TOut*>(p.residual) + static_cast<std::int64_t>(row) * p.ldr + col : nullptr;
    const TOut* b = p.bias ? static_cast<const TOut*>(p.bias) + col : nullptr;
    // Operands as whole vectors where they allow it: one load each instead of four dependent ones.
    float cv[4], bv[4], rv[4];
    if (c) load4(c, n, cv);
    if (b) load4(b, n, bv);
    if (r) load4(r, n, rv);
    combine(p, v, n, c, cv, b, bv, r, rv);
  }

  // The same with the output type (which C, bias and residual share) known only at run time: the
  // arithmetic and the activations exist once, only the loads are per type. The mma.sync kernels use
  // this one, so each instance holds one copy of the epilogue instead of one per output type.
  __device__ __forceinline__ static void apply_dynamic(const Params& p, DType t, int row, int col, float* v, int n) {
    float cv[4], bv[4], rv[4];
    const bool c = p.beta != 0.0f, b = p.bias != nullptr, r = p.residual != nullptr;
    if (c) load4(t, p.c, static_cast<std::int64_t>(row) * p.ldc + col, n, cv);
    if (b) load4(t, p.bias, col, n, bv);
    if (r) load4(t, p.residual, static_cast<std::int64_t>(row) * p.ldr + col, n, rv);
    combine(p, v, n, c, cv, b, bv, r, rv);
  }

  // v = act(alpha·v + beta·cv + bv + rv), then clamp; only the operands that are there (flags as
  // booleans, not null pointers to the arrays, so the arrays stay in registers). Public for kernels that
  // gather the operands themselves.
  __device__ __forceinline__ static void combine(const Params& p, float* v, int n, bool c, const float (&cv)[4], bool b,
                                                 const float (&bv)[4], bool r, const float (&rv)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (i >= n) break;
      float x = p.alpha * v[i];
      if (c) x += p.beta * cv[i];
      if (b) x += bv[i];
      if (r) x += rv[i];
      v[i] = x;
    }
    // One branch per call, not per element.
    switch (p.activation) {
      case Activation::relu: for (int i = 0; i < 4; ++i) v[i] = relu(v[i]); break;
      case Activation::gelu_tanh: for (int i = 0; i < 4; ++i) v[i] = gelu_tanh(v[i]); break;
      case Activation::gelu_erf: for (int i = 0; i < 4; ++i) v[i] = gelu_erf(v[i]); break;
      case Activation::silu: for (int i = 0; i < 4; ++i) v[i] = silu(v[i]); break;
      default: break;
    }
    if (p.clamp) {
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = fminf(fmaxf(v[i], p.clamp_lo), p.clamp_hi);
    }
  }

 private:
  // Elements [offset, offset + n) of an array of type t, as floats.
  __device__ __forceinline__ static void load4(DType t, const void* base, std::int64_t offset, int n, float (&out)[4]) {
    switch (t) {
      case DType::f16: load4(static_cast<const __half*>(base) + offset, n, out); break;
      case DType::bf16: load4(static_cast<const __nv_bfloat16*>(base) + offset, n, out); break;
      default: load4(static_cast<const float*>(base) + offset, n, out); break;
    }
  }

  // n (1 to 4) consecutive elements as floats: one vector load when n == 4 and the address allows it.
  template <class T>
  __device__ __forceinline__ static void load4(const T* src, int n, float (&out)[4]) {
    if (n == 4 && reinterpret_cast<std::uintptr_t>(src) % (4 * sizeof(T)) == 0) {
      struct alignas(4 * sizeof(T)) Vec4 { T e[4]; };
      const Vec4 x = *reinterpret_cast<const Vec4*>(src);
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i] = to_float(x.e[i]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i] = i < n ? to_float(src[i]) : 0.0f;
    }
  }
};

// Host: kernel parameters from the data description.
inline Builtin::Params make_builtin_params(const EpilogueSpec& s, const void* c, std::int64_t ldc, const void* bias,
                                           const void* residual, std::int64_t ldr) {
  Builtin::Params p;
  p.alpha = s.alpha;
  p.beta = s.beta;
  p.c = s.beta != 0.0f ? c : nullptr;
  p.ldc = ldc;
  p.bias = s.bias ? bias : nullptr;
  p.residual = s.residual ? residual : nullptr;
  p.ldr = ldr;
  p.activation = s.activation;
  p.clamp = s.clamp;
  p.clamp_lo = s.clamp_lo;
  p.clamp_hi = s.clamp_hi;
  return p;
}

// A user functor F (`__device__ float operator()(float acc, int row, int col) const`) as an epilogue.
template <class F>
struct Elementwise {
  using Params = F;
  template <class TOut>
  __device__ __forceinline__ static void apply(const Params& f, int row, int col, float* v, int n) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < n) v[i] = f(v[i], row, col + i);
  }
};

}  // namespace ktune::epilogue
