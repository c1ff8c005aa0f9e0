// tools/common/cudnn_conv_ref.hpp — cuDNN as the reference of conv2d fprop + bias + ReLU (NHWC x,
// KRSC w, NPQK y, fp32 compute, tensor-op math), the two ways a framework calls it:
//   fused    cudnnConvolutionBiasActivationForward with IMPLICIT_PRECOMP_GEMM (the only algorithm it
//            accepts with ReLU)
//   unfused  cudnnConvolutionForward (cuDNN's own _v7 choice) + cudnnAddTensor + cudnnActivationForward
// and of the plain convolution (identity epilogue): cudnnConvolutionForward alone ("unfused"; there is
// no fused call for it, fused_status says so).
// Every cuDNN and CUDA return code becomes a ktune::Status; nothing here aborts. Host code only (no
// kernels); include it where cudnn.h is available (KTUNE_HAVE_CUDNN).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <memory>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_harness.cuh"
#include "ktune/conv/problem.hpp"

namespace ktune::tools {

inline Status cudnn_status(cudnnStatus_t s, std::string_view what) {
  if (s == CUDNN_STATUS_SUCCESS) return {};
  return error(StatusCode::internal, std::string(what) + ": " + cudnnGetErrorString(s));
}
#define KTUNE_TOOLS_CUDNN(call) KTUNE_RETURN_IF_ERROR(::ktune::tools::cudnn_status((call), #call))

inline std::string cudnn_version_string() {  // 91400 → "9.14.0"
  const std::size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

class CudnnConvRef {
 public:
  // A cuDNN handle or descriptor that destroys itself.
  template <class H>
  using Owned = std::unique_ptr<std::remove_pointer_t<H>, cudnnStatus_t (*)(H)>;

  Status init() { return create(handle_, cudnnCreate, "cudnnCreate"); }

  // One problem's descriptors, algorithms, workspace and bias in the type the fused call accepts.
  struct Plan {
    // What each reference runs, for benchmark labels.
    std::string fused_label() const { return "cudnnConvolutionBiasActivationForward, " + bias_kind + " bias"; }
    std::string unfused_label() const {
      return "cudnnConvolutionForward algo " + std::to_string(int(unfused_algo)) + (conv_only ? "" : " + AddTensor + Activation");
    }

    Owned<cudnnTensorDescriptor_t> xd{nullptr, cudnnDestroyTensorDescriptor}, yd{nullptr, cudnnDestroyTensorDescriptor},
        bd{nullptr, cudnnDestroyTensorDescriptor};
    Owned<cudnnFilterDescriptor_t> wd{nullptr, cudnnDestroyFilterDescriptor};
    Owned<cudnnConvolutionDescriptor_t> cd{nullptr, cudnnDestroyConvolutionDescriptor};
    Owned<cudnnActivationDescriptor_t> ad{nullptr, cudnnDestroyActivationDescriptor};
    cudnnConvolutionFwdAlgo_t unfused_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    std::size_t ws_fused = 0, ws_unfused = 0;
    DeviceBuffer workspace, bias_f32;
    const void* bias = nullptr;  // the caller's bias (output type) or bias_f32
    std::string bias_kind;
    Status fused_status;  // not ok: cudnnConvolutionBiasActivationForward refuses this problem
    bool conv_only = false;  // identity epilogue: y = conv(x, w), the unfused call is the convolution alone
  };

  template <class H>
  static Status create(Owned<H>& out, cudnnStatus_t (*make)(H*), const char* what) {
    H h = nullptr;
    KTUNE_RETURN_IF_ERROR(cudnn_status(make(&h), what));
    out.reset(h);
    return {};
  }

  // Descriptors for `d` (groups 1, bias + ReLU epilogue, no residual), then one fused call on `o`
  // (writing o.y): some cuDNN versions take the bias only in fp32, so a failing first try with the
  // output-type bias is repeated with an fp32 copy of it. When neither runs, the plan still serves the
  // unfused sequence and fused_status says why the fused call does not. With the identity epilogue
  // (y = conv(x, w)) the plan has only the unfused call (the convolution), and nothing runs here.
  Status make_plan(const Conv2dDesc& d, const Conv2dOperands& o, cudaStream_t s, std::unique_ptr<Plan>& out) {
    const EpilogueSpec& e = d.epilogue;
    const bool plain = e.alpha == 1.0f && e.beta == 0.0f && !e.residual && !e.clamp && d.type == d.out_type;
    const bool conv_only = plain && !e.bias && e.activation == Activation::none;
    if (!conv_only && !(plain && e.bias && e.activation == Activation::relu))
      return error(StatusCode::unsupported,
                   "the cuDNN reference computes y = relu(conv(x, w) + bias) or y = conv(x, w), in one type only");
    auto p = std::make_unique<Plan>();
    p->conv_only = conv_only;
    const ConvShape sh = conv_shape(d);
    const cudnnDataType_t t = d.type == DType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    auto i32 = [](std::int64_t v) { return static_cast<int>(v); };
    KTUNE_TOOLS_CUDNN(cudnnSetStream(h(), s));
    for (auto* td : {&p->xd, &p->yd, &p->bd})
      KTUNE_RETURN_IF_ERROR(create(*td, cudnnCreateTensorDescriptor, "cudnnCreateTensorDescriptor"));
    KTUNE_RETURN_IF_ERROR(create(p->wd, cudnnCreateFilterDescriptor, "cudnnCreateFilterDescriptor"));
    KTUNE_RETURN_IF_ERROR(create(p->cd, cudnnCreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor"));
    KTUNE_RETURN_IF_ERROR(create(p->ad, cudnnCreateActivationDescriptor, "cudnnCreateActivationDescriptor"));
    cudnnTensorDescriptor_t xd = p->xd.get(), yd = p->yd.get();
    cudnnFilterDescriptor_t wd = p->wd.get();
    cudnnConvolutionDescriptor_t cd = p->cd.get();
    KTUNE_TOOLS_CUDNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, t, i32(d.n), i32(d.c), i32(d.h), i32(d.w)));
    KTUNE_TOOLS_CUDNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, t, i32(d.n), i32(d.k), i32(sh.p), i32(sh.q)));
    KTUNE_TOOLS_CUDNN(cudnnSetFilter4dDescriptor(wd, t, CUDNN_TENSOR_NHWC, i32(d.k), i32(d.c), i32(d.r), i32(d.s)));
    KTUNE_TOOLS_CUDNN(cudnnSetConvolution2dDescriptor(cd, i32(d.pad_h), i32(d.pad_w), i32(d.stride_h), i32(d.stride_w),
                                                      i32(d.dil_h), i32(d.dil_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    KTUNE_TOOLS_CUDNN(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    KTUNE_TOOLS_CUDNN(cudnnSetActivationDescriptor(p->ad.get(), CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    KTUNE_TOOLS_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h(), xd, wd, cd, yd, kFusedAlgo, &p->ws_fused));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int found = 0;
    KTUNE_TOOLS_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h(), xd, wd, cd, yd, 8, &found, perf));
    p->unfused_algo = kFusedAlgo;
    p->ws_unfused = p->ws_fused;
    for (int i = 0; i < found; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        p->unfused_algo = perf[i].algo;
        p->ws_unfused = perf[i].memory;
        break;
      }
    KTUNE_RETURN_IF_ERROR(p->workspace.allocate(std::max(p->ws_fused, p->ws_unfused)));
    if (conv_only) {
      (void)(p->fused_status = error(StatusCode::unsupported, "identity epilogue: cuDNN's fused call needs a bias and an activation"));
      out = std::move(p);
      return {};
    }

    // The bias: the output type first, fp32 when cuDNN refuses it.
    KTUNE_TOOLS_CUDNN(cudnnSetTensor4dDescriptor(p->bd.get(), CUDNN_TENSOR_NHWC, t, 1, i32(d.k), 1, 1));
    p->bias = o.bias;
    p->bias_kind = std::string(to_string(d.out_type));
    if ((p->fused_status = run_fused(*p, o, s)).ok()) {
      out = std::move(p);
      return {};
    }
    std::vector<float> host(static_cast<std::size_t>(d.k));
    std::vector<unsigned short> raw(host.size());
    KTUNE_TOOLS_CUDA(cudaMemcpy(raw.data(), o.bias, raw.size() * 2, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (d.out_type == DType::bf16) {
        __nv_bfloat16_raw r;
        r.x = raw[i];
        host[i] = __bfloat162float(__nv_bfloat16(r));
      } else {
        __half_raw r;
        r.x = raw[i];
        host[i] = __half2float(__half(r));
      }
    }
    KTUNE_RETURN_IF_ERROR(p->bias_f32.allocate(host.size() * sizeof(float)));
    KTUNE_TOOLS_CUDA(cudaMemcpy(p->bias_f32.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    KTUNE_TOOLS_CUDNN(cudnnSetTensor4dDescriptor(p->bd.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, i32(d.k), 1, 1));
    p->bias = p->bias_f32.get();
    p->bias_kind = "f32";
    if (Status f32 = run_fused(*p, o, s); !f32.ok()) {  // no fused call for this problem: keep the output-type bias
      KTUNE_TOOLS_CUDNN(cudnnSetTensor4dDescriptor(p->bd.get(), CUDNN_TENSOR_NHWC, t, 1, i32(d.k), 1, 1));
      p->bias = o.bias;
      p->bias_kind = std::string(to_string(d.out_type));
    } else {
      p->fused_status = f32;
    }
    out = std::move(p);
    return {};
  }

  // y = relu(conv(x, w) + bias) in one call (o.bias is ignored: the plan's bias is used).
  Status run_fused(const Plan& p, const Conv2dOperands& o, cudaStream_t s) {
    const float one = 1.0f, zero = 0.0f;
    KTUNE_TOOLS_CUDNN(cudnnSetStream(h(), s));
    cudnnTensorDescriptor_t yd = p.yd.get();
    KTUNE_TOOLS_CUDNN(cudnnConvolutionBiasActivationForward(h(), &one, p.xd.get(), o.x, p.wd.get(), o.w, p.cd.get(), kFusedAlgo,
                                                            p.workspace.get(), p.ws_fused, &zero, yd, o.y, p.bd.get(), p.bias,
                                                            p.ad.get(), yd, o.y));
    return {};
  }

  // The same as three calls: the convolution, the bias added in place, ReLU in place (the convolution
  // alone for a conv_only plan).
  Status run_unfused(const Plan& p, const Conv2dOperands& o, cudaStream_t s) {
    const float one = 1.0f, zero = 0.0f;
    KTUNE_TOOLS_CUDNN(cudnnSetStream(h(), s));
    cudnnTensorDescriptor_t yd = p.yd.get();
    KTUNE_TOOLS_CUDNN(cudnnConvolutionForward(h(), &one, p.xd.get(), o.x, p.wd.get(), o.w, p.cd.get(), p.unfused_algo,
                                              p.workspace.get(), p.ws_unfused, &zero, yd, o.y));
    if (p.conv_only) return {};
    KTUNE_TOOLS_CUDNN(cudnnAddTensor(h(), &one, p.bd.get(), p.bias, &one, yd, o.y));
    KTUNE_TOOLS_CUDNN(cudnnActivationForward(h(), p.ad.get(), &one, yd, o.y, &zero, yd, o.y));
    return {};
  }

 private:
  static constexpr cudnnConvolutionFwdAlgo_t kFusedAlgo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  Owned<cudnnHandle_t> handle_{nullptr, cudnnDestroy};
  cudnnHandle_t h() const { return handle_.get(); }
};

}  // namespace ktune::tools
