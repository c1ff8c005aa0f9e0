// GPU tests of ktune::gemm under concurrency: 16 host threads on several streams (and on every GPU
// present) calling the tuned one-call API with mixed keys, several threads on the same key at the same
// time, every result checked against a float64 reference; and tuning a new key while another stream is
// busy must neither wait for that stream nor disturb its work.
//
// Worker threads use no doctest assertion (a failing REQUIRE would throw on a thread that cannot catch
// it): they record what happened, and the main thread checks it.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/test_util.cuh"

using namespace kt;

namespace kt {
// test_kernels.cu: a one-thread kernel on `stream` that spins until *flag becomes non-zero or
// `timeout_ns` passed, then writes 1 (saw the flag) or 0 to *result.
void launch_spin_until_flag(const volatile int* flag, unsigned long long timeout_ns, int* result, cudaStream_t stream);
}  // namespace kt

namespace {

// One problem kind: operand type and compute, layouts, sizes, output type, epilogue.
struct Spec {
  const char* label;
  DType ab;
  Compute compute;
  Layout la, lb;
  std::int64_t m, n, k;
  DType out;
  EpilogueSpec ep;
};

EpilogueSpec with_beta(float beta) {
  EpilogueSpec e;
  e.alpha = 0.75f;
  e.beta = beta;
  return e;
}
EpilogueSpec with_residual(Activation a) {
  EpilogueSpec e;
  e.residual = true;
  e.activation = a;
  return e;
}

// Shapes no other test uses, so the keys are new to the process-wide tuner.
std::vector<Spec> specs() {
  return {
      {"f16 tn bias_relu", DType::f16, Compute::f32, Layout::row, Layout::col, 200, 136, 96, DType::f16,
       bias_activation(Activation::relu)},
      {"bf16 tn -> f32", DType::bf16, Compute::f32, Layout::row, Layout::col, 130, 72, 64, DType::f32, {}},
      {"f16 nn ab", DType::f16, Compute::f32, Layout::col, Layout::col, 72, 264, 40, DType::f16, with_beta(0.5f)},
      {"f32 tn exact", DType::f32, Compute::f32, Layout::row, Layout::col, 72, 40, 36, DType::f32, {}},
      {"tf32 tn gelu", DType::f32, Compute::tf32, Layout::row, Layout::col, 96, 104, 64, DType::f32,
       bias_activation(Activation::gelu_tanh)},
      {"bf16 nt res_silu", DType::bf16, Compute::f32, Layout::col, Layout::row, 136, 200, 72, DType::bf16,
       with_residual(Activation::silu)},
  };
}

GemmDesc desc_of(const Spec& s) {
  GemmDesc d;
  d.m = s.m;
  d.n = s.n;
  d.k = s.k;
  d.ab_type = s.ab;
  d.compute = s.compute;
  d.a_layout = s.la;
  d.b_layout = s.lb;
  d.d_type = s.out;
  d.epilogue = s.ep;
  return d;
}

MathOp math_of(const Spec& s) {
  if (s.ab == DType::f16) return MathOp::mma_f16;
  if (s.ab == DType::bf16) return MathOp::mma_bf16;
  return s.compute == Compute::tf32 ? MathOp::mma_tf32 : MathOp::simt_f32;
}

// Can the table serve this kind on the current device (cudaMalloc'd pointers: 256-byte aligned)?
bool servable(const Spec& s, std::string& why) {
  DeviceInfo dev;
  if (!current_device(dev).ok()) return false;
  GemmOperands o;
  o.a = reinterpret_cast<const void*>(std::uintptr_t{1} << 40);
  o.b = reinterpret_cast<const void*>(std::uintptr_t{2} << 40);
  o.c = reinterpret_cast<const void*>(std::uintptr_t{3} << 40);
  o.d = reinterpret_cast<void*>(std::uintptr_t{4} << 40);
  o.bias = reinterpret_cast<const void*>(std::uintptr_t{5} << 40);
  o.residual = reinterpret_cast<const void*>(std::uintptr_t{6} << 40);
  GemmOptions opt;
  opt.heuristic = true;
  const GemmKernelEntry* e = nullptr;
  const Status st = select_gemm(desc_of(s), o, gemm_table(), dev, opt, e);
  why = st.to_string();
  return st.ok();
}

// Host images (poison outside the data) built without touching the device or doctest.
struct HostMatrix {
  Storage st;
  std::vector<double> vals;          // logical row-major rows×cols, as stored
  std::vector<unsigned char> image;  // the whole buffer
  void* dev = nullptr;
  void* data() const { return static_cast<unsigned char*>(dev) + static_cast<std::size_t>(st.first()) * st.es(); }
};

HostMatrix host_matrix(const Storage& st, Rng* rng) {
  HostMatrix m;
  m.st = st;
  m.vals.assign(static_cast<std::size_t>(st.rows * st.cols), 0.0);
  m.image.assign(st.bytes(), kPoison);
  if (rng != nullptr)
    for (std::int64_t i = 0; i < st.rows; ++i)
      for (std::int64_t j = 0; j < st.cols; ++j) {
        unsigned char* p = m.image.data() + static_cast<std::size_t>(st.first() + st.index(i, j)) * st.es();
        encode(st.type, p, rng->nonzero());
        m.vals[static_cast<std::size_t>(i * st.cols + j)] = decode(st.type, p);
      }
  return m;
}

// What one call did: recorded by the worker, checked by the main thread.
struct Outcome {
  std::string what;
  std::string cuda_error;
  Status status;
  Check check;
  double tol = 0;
  bool ran = false;
};

std::string cuda_err(cudaError_t e, const char* what) {
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorName(e);
}

// One problem of kind `s` with data from `seed`, uploaded on `stream`: device buffers are appended to
// `keep` (freed by the caller once all threads are done: cudaFree would synchronise the device).
struct Prepared {
  Spec s{};
  HostMatrix A, B, D, C, bias, R;
  GemmDesc d;
  GemmOperands ops;
  Outcome out;
};

Prepared prepare(const Spec& s, std::uint64_t seed, cudaStream_t stream, std::vector<void*>& keep) {
  Prepared p;
  p.s = s;
  p.out.tol = tolerance(math_of(s), s.out);
  Rng rng(seed);
  const bool a_row = s.la == Layout::row, b_row = s.lb == Layout::row;
  // Padded leading dimensions (still 16-byte multiples) and guard bands around every buffer.
  p.A = host_matrix(storage(s.ab, s.m, s.k, a_row, 8), &rng);
  p.B = host_matrix(storage(s.ab, s.k, s.n, b_row, 8), &rng);
  p.D = host_matrix(storage(s.out, s.m, s.n, true, 8), nullptr);
  if (s.ep.beta != 0.0f) p.C = host_matrix(storage(s.out, s.m, s.n, true, 16), &rng);
  if (s.ep.bias) p.bias = host_matrix(storage(s.out, 1, s.n, true), &rng);
  if (s.ep.residual) p.R = host_matrix(storage(s.out, s.m, s.n, true, 24), &rng);
  for (HostMatrix* m : {&p.A, &p.B, &p.D, &p.C, &p.bias, &p.R}) {
    if (m->image.empty()) continue;
    if (p.out.cuda_error = cuda_err(cudaMalloc(&m->dev, m->image.size()), "cudaMalloc"); !p.out.cuda_error.empty()) return p;
    keep.push_back(m->dev);
    p.out.cuda_error = cuda_err(cudaMemcpyAsync(m->dev, m->image.data(), m->image.size(), cudaMemcpyHostToDevice, stream),
                                "cudaMemcpyAsync H2D");
    if (!p.out.cuda_error.empty()) return p;
  }
  GemmDesc& d = p.d;
  d = desc_of(s);
  d.lda = p.A.st.ld;
  d.ldb = p.B.st.ld;
  d.ldd = p.D.st.ld;
  p.ops.a = p.A.data();
  p.ops.b = p.B.data();
  p.ops.d = p.D.data();
  if (p.C.dev) {
    p.ops.c = p.C.data();
    d.ldc = p.C.st.ld;
  }
  if (p.bias.dev) p.ops.bias = p.bias.data();
  if (p.R.dev) {
    p.ops.residual = p.R.data();
    d.ldr = p.R.st.ld;
  }
  p.out.what = std::string(s.label) + ": " + describe(d);
  return p;
}

// D against a float64 reference of p's problem (img: the whole D buffer, guard bands included).
Check check_result(const Prepared& p, const std::vector<unsigned char>& img) {
  const Spec& s = p.s;
  std::vector<double> acc(static_cast<std::size_t>(s.m * s.n), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t k = 0; k < s.k; ++k) {
      const double a = p.A.vals[static_cast<std::size_t>(i * s.k + k)];
      for (std::int64_t j = 0; j < s.n; ++j)
        acc[static_cast<std::size_t>(i * s.n + j)] += a * p.B.vals[static_cast<std::size_t>(k * s.n + j)];
    }
  const std::vector<double> ref = reference_epilogue(acc, s.m, s.n, s.ep, p.C.dev ? &p.C.vals : nullptr,
                                                     p.bias.dev ? &p.bias.vals : nullptr, p.R.dev ? &p.R.vals : nullptr);
  return check_image(p.D.st, img, ref);
}

// ktune::gemm on `stream` (the tuned path: tunes the key on first use, then a lookup), then the result
// against a float64 reference.
Outcome execute(const Prepared& p, cudaStream_t stream) {
  Outcome out = p.out;
  if (!out.cuda_error.empty()) return out;
  (void)(out.status = gemm(p.d, p.ops, stream));
  out.ran = true;
  std::vector<unsigned char> img(p.D.image.size());
  if (out.status.ok())
    out.cuda_error = cuda_err(cudaMemcpyAsync(img.data(), p.D.dev, img.size(), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync D2H");
  if (const std::string e = cuda_err(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); out.cuda_error.empty())
    out.cuda_error = e;
  if (!out.status.ok() || !out.cuda_error.empty()) return out;
  out.check = check_result(p, img);
  return out;
}

Outcome run_one(const Spec& s, std::uint64_t seed, cudaStream_t stream, std::vector<void*>& keep) {
  return execute(prepare(s, seed, stream, keep), stream);
}

void check_outcome(const Outcome& o, const std::string& who) {
  CAPTURE(who);
  CAPTURE(o.what);
  CHECK_MESSAGE(o.cuda_error.empty(), o.cuda_error);
  CHECK_MESSAGE(o.status.ok(), o.status.to_string());
  if (o.status.ok() && o.cuda_error.empty()) CHECK_MESSAGE(o.check.ok(o.tol), o.check.summary());
}

}  // namespace

TEST_CASE("concurrency GPU: 16 threads x several streams, mixed and shared keys through the tuned API, every result checked") {
  int devices = 0;
  KT_CUDA(cudaGetDeviceCount(&devices));
  int original = 0;
  KT_CUDA(cudaGetDevice(&original));
  std::vector<Spec> kinds;
  for (const Spec& s : specs()) {
    std::string why;
    if (servable(s, why)) kinds.push_back(s);
    else MESSAGE("not served by this build/device, left out: " << s.label << " (" << why << ")");
  }
  REQUIRE(kinds.size() >= 2);
  constexpr int kThreads = 16, kStreamsPerDevice = 4, kRounds = 4;
  std::vector<std::vector<cudaStream_t>> streams(static_cast<std::size_t>(devices));
  for (int g = 0; g < devices; ++g) {
    KT_CUDA(cudaSetDevice(g));
    for (int i = 0; i < kStreamsPerDevice; ++i) {
      cudaStream_t st = nullptr;
      KT_CUDA(cudaStreamCreateWithFlags(&st, i % 2 == 0 ? cudaStreamNonBlocking : cudaStreamDefault));
      streams[static_cast<std::size_t>(g)].push_back(st);
    }
  }
  KT_CUDA(cudaSetDevice(original));
  const auto tunings_before = default_tuner().counters().tunings;

  std::vector<std::vector<Outcome>> outcomes(kThreads);
  std::vector<std::vector<void*>> buffers(kThreads);
  std::vector<std::string> thread_errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const int g = t % devices;
      if (cudaSetDevice(g) != cudaSuccess) {
        thread_errors[static_cast<std::size_t>(t)] = "cudaSetDevice failed";
        start.count_down();
        return;
      }
      start.arrive_and_wait();  // all threads call ktune::gemm at once: new keys, several on the same one
      for (int r = 0; r < kRounds; ++r) {
        // Round 0: threads t and t + kinds.size() (and so on) share a key; later rounds mix them.
        const Spec& s = kinds[static_cast<std::size_t>(t + 3 * r) % kinds.size()];
        cudaStream_t st = streams[static_cast<std::size_t>(g)][static_cast<std::size_t>(t + r) % kStreamsPerDevice];
        const std::uint64_t seed = 1000 + 97 * static_cast<std::uint64_t>(t) + static_cast<std::uint64_t>(r);
        outcomes[static_cast<std::size_t>(t)].push_back(run_one(s, seed, st, buffers[static_cast<std::size_t>(t)]));
      }
    });
  for (auto& th : threads) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto tunings = default_tuner().counters().tunings - tunings_before;
  MESSAGE(kThreads << " threads x " << kRounds << " calls on " << devices << " GPU(s) x " << kStreamsPerDevice
                   << " streams, " << kinds.size() << " keys: " << tunings << " keys tuned, " << secs << " s");

  for (int t = 0; t < kThreads; ++t) {
    CHECK_MESSAGE(thread_errors[static_cast<std::size_t>(t)].empty(), thread_errors[static_cast<std::size_t>(t)]);
    CHECK(outcomes[static_cast<std::size_t>(t)].size() == static_cast<std::size_t>(kRounds));
    for (std::size_t r = 0; r < outcomes[static_cast<std::size_t>(t)].size(); ++r)
      check_outcome(outcomes[static_cast<std::size_t>(t)][r], "thread " + std::to_string(t) + " round " + std::to_string(r));
  }
  // Each key is tuned at most once per device, however many threads met it first at the same time.
  CHECK(tunings <= kinds.size() * static_cast<std::size_t>(devices));
  for (int g = 0; g < devices; ++g) {
    KT_CUDA(cudaSetDevice(g));
    KT_CUDA(cudaDeviceSynchronize());
    for (cudaStream_t st : streams[static_cast<std::size_t>(g)]) KT_CUDA(cudaStreamDestroy(st));
  }
  for (auto& list : buffers)
    for (void* p : list) cudaFree(p);
  KT_CUDA(cudaSetDevice(original));
}

// A thread whose first CUDA call is ktune's has no current context until a runtime call binds one, and
// the Hopper launchers encode their TMA tensor maps (driver calls) before they launch: ktune binds the
// primary context itself (tma.cuh, bind_current_context). H200 s12: without that, the no-wait test's
// second thread got CUresult 201 from cuTensorMapEncodeTiled once the tuner picked a Hopper instance.
// Here each kind of Hopper instance (a default, a swap-AB one), by name, from a fresh thread.
TEST_CASE("concurrency GPU: a fresh thread's first CUDA call is a Hopper GEMM (TMA maps need a current context)") {
  DeviceInfo dev;
  REQUIRE(current_device(dev).ok());
  if (dev.cc != 90) {
    MESSAGE("SKIPPED: not a Hopper GPU (cc " << dev.cc << ")");
    return;
  }
  const Spec s{"bf16 tn fresh thread", DType::bf16, Compute::f32, Layout::row, Layout::col, 200, 152, 136, DType::bf16,
               bias_activation(Activation::relu)};
  std::vector<std::string> names;
  for (const std::string_view kind : {std::string_view{"sm90_wgmma_bf16_tn_128x128"}, std::string_view{"_swap_"}})
    for (const auto& e : gemm_table().entries())
      if (std::string_view(e.name).find(kind) != std::string_view::npos &&
          can_implement(e, desc_of(s), GemmAlignment{16, 16, 16}, &dev).ok()) {
        names.emplace_back(e.name);
        break;
      }
  if (names.empty()) {
    MESSAGE("SKIPPED: this build has no Hopper instances");
    return;
  }
  CHECK_MESSAGE(names.size() == 2, "a default and a swap-AB Hopper bf16 tn instance in the table");
  std::vector<void*> keep;
  cudaStream_t stream = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Prepared p = prepare(s, 300 + i, stream, keep);
    REQUIRE_MESSAGE(p.out.cuda_error.empty(), p.out.cuda_error);
    KT_CUDA(cudaStreamSynchronize(stream));
    Outcome o = p.out;
    std::thread fresh([&] {  // no CUDA call on this thread before ktune::gemm
      GemmOptions opt;
      opt.instance = names[i].c_str();
      (void)(o.status = gemm(p.d, p.ops, stream, opt));
      o.ran = true;
    });
    fresh.join();
    std::vector<unsigned char> img(p.D.image.size());
    if (o.status.ok()) o.cuda_error = cuda_err(cudaMemcpyAsync(img.data(), p.D.dev, img.size(), cudaMemcpyDeviceToHost, stream), "D2H");
    if (const std::string e = cuda_err(cudaStreamSynchronize(stream), "sync"); o.cuda_error.empty()) o.cuda_error = e;
    if (o.status.ok() && o.cuda_error.empty()) o.check = check_result(p, img);
    check_outcome(o, names[i]);
  }
  KT_CUDA(cudaStreamDestroy(stream));
  for (void* q : keep) cudaFree(q);
}

// Runs only as the child process of the next test (KTUNE_TEST_CHILD_NO_WAIT set), so that the module
// loading mode can be chosen (CUDA_MODULE_LOADING is read when CUDA starts).
TEST_CASE("concurrency GPU child: tuning a new key does not wait for a busy stream") {
  if (std::getenv("KTUNE_TEST_CHILD_NO_WAIT") == nullptr) return;
  const Spec warm{"f16 tn warm-up", DType::f16, Compute::f32, Layout::row, Layout::col, 520, 392, 264, DType::f16, {}};
  const Spec fresh{"f16 tn new key", DType::f16, Compute::f32, Layout::row, Layout::col, 328, 200, 136, DType::f16,
                   bias_activation(Activation::relu)};
  std::string why;
  if (!servable(warm, why)) {
    MESSAGE("no f16 tn instance: " << why);
    return;
  }
  // Lazy module loading may synchronise the context when a kernel is first used; a kernel that spins
  // until the host says so would then never see it. Load every instance now, as a long-running
  // application would have.
  for (const auto& e : gemm_table().entries()) {
    cudaFuncAttributes attr{};
    if (e.attributes != nullptr && e.attributes(&attr) != cudaSuccess) (void)cudaGetLastError();
  }
  // Blocking streams (cudaStreamDefault): anything on the legacy default stream, a device-wide
  // synchronisation or a cudaFree would wait for the spinning kernel.
  cudaStream_t busy = nullptr, caller = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&busy, cudaStreamDefault));
  KT_CUDA(cudaStreamCreateWithFlags(&caller, cudaStreamDefault));
  std::vector<void*> keep;
  // Tune a larger key of the same kind on `busy` first: the tuner's scratch pool and the workspace slot
  // of `busy` already have their size (growing them is an allocation, which may synchronise).
  const Outcome w = run_one(warm, 11, busy, keep);
  check_outcome(w, "warm-up on the busy stream");
  const Outcome w2 = run_one(warm, 12, caller, keep);
  check_outcome(w2, "warm-up on the caller's stream");

  // Everything the window below needs is allocated and uploaded first. Results come back into pinned
  // host memory: a copy into pageable memory goes through the driver's staging buffers, and a staged
  // copy that waits behind the spinner on one thread can hold up another thread's staged copy ("any
  // CUDA API call may block ... for contention for internal resources"). What is tested here are
  // ktune's calls, not the driver's pageable copies.
  const Prepared behind_p = prepare(warm, 13, busy, keep);
  const Prepared fresh_p = prepare(fresh, 14, caller, keep);
  REQUIRE_MESSAGE(behind_p.out.cuda_error.empty(), behind_p.out.cuda_error);
  REQUIRE_MESSAGE(fresh_p.out.cuda_error.empty(), fresh_p.out.cuda_error);
  // KTUNE_TEST_NO_WAIT_PAGEABLE=1 (diagnosis only): pageable copies instead, as this test once had.
  const bool pageable = std::getenv("KTUNE_TEST_NO_WAIT_PAGEABLE") != nullptr;
  std::vector<unsigned char> behind_pageable, fresh_pageable;
  unsigned char* behind_img = nullptr;
  unsigned char* fresh_img = nullptr;
  if (pageable) {
    behind_pageable.resize(behind_p.D.image.size());
    fresh_pageable.resize(fresh_p.D.image.size());
    behind_img = behind_pageable.data();
    fresh_img = fresh_pageable.data();
    MESSAGE("KTUNE_TEST_NO_WAIT_PAGEABLE: results are copied into pageable memory");
  } else {
    KT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&behind_img), behind_p.D.image.size()));
    KT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&fresh_img), fresh_p.D.image.size()));
  }
  cudaEvent_t gemm_done = nullptr, copy_done = nullptr;
  KT_CUDA(cudaEventCreateWithFlags(&gemm_done, cudaEventDisableTiming));
  KT_CUDA(cudaEventCreateWithFlags(&copy_done, cudaEventDisableTiming));
  int* flag = nullptr;
  int* dflag = nullptr;
  int* dresult = nullptr;
  KT_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped));
  KT_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0));
  KT_CUDA(cudaMalloc(&dresult, sizeof(int)));
  KT_CUDA(cudaMemset(dresult, 0xff, sizeof(int)));
  KT_CUDA(cudaDeviceSynchronize());
  *reinterpret_cast<volatile int*>(flag) = 0;
  const auto tunings_before = default_tuner().counters().tunings;
  // The tuner's log and the test's own steps with the time of each line (seconds since the spinner
  // started): where it waited.
  std::mutex log_mu;
  std::vector<std::string> timeline;
  auto spin_start = std::chrono::steady_clock::now();
  auto since_spin = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - spin_start).count(); };
  auto note = [&](const std::string& m) {
    const double t = since_spin();
    std::lock_guard lock(log_mu);
    timeline.push_back(std::to_string(t) + " s: " + m);
    return t;
  };
  const tuner::TunerOptions saved_options = default_tuner().options();
  {
    tuner::TunerOptions o = saved_options;
    o.log_level = tuner::LogLevel::verbose;
    o.log_sink = [&](tuner::LogLevel, std::string_view m) { note(std::string(m)); };
    default_tuner().set_options(std::move(o));
  }

  // `busy`: a kernel that spins until the host sets the flag (5 s at most), then, from another thread,
  // a GEMM of the tuned key queued behind it.
  constexpr unsigned long long kTimeoutNs = 5'000'000'000ull;
  constexpr double kDeadline = 3.0;  // s after the spinner's start: the new key must be done by then
  spin_start = std::chrono::steady_clock::now();
  launch_spin_until_flag(dflag, kTimeoutNs, dresult, busy);
  KT_CUDA(cudaGetLastError());
  std::atomic<bool> behind_done{false};
  Outcome behind = behind_p.out;
  std::thread other([&] {
    (void)(behind.status = gemm(behind_p.d, behind_p.ops, busy));  // queued behind the spinner
    behind.ran = true;
    if (behind.status.ok())
      behind.cuda_error = cuda_err(cudaMemcpyAsync(behind_img, behind_p.D.dev, behind_p.D.image.size(),
                                                   cudaMemcpyDeviceToHost, busy),
                                   "cudaMemcpyAsync D2H (busy)");
    if (const std::string e = cuda_err(cudaStreamSynchronize(busy), "cudaStreamSynchronize(busy)"); behind.cuda_error.empty())
      behind.cuda_error = e;
    behind_done = true;
  });
  // Let the other thread queue its GEMM behind the spinner, then tune a new key on `caller`.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Outcome f = fresh_p.out;
  const double t_call = note("test: ktune::gemm(new key) on the caller's stream");
  (void)(f.status = gemm(fresh_p.d, fresh_p.ops, caller));
  f.ran = true;
  const double t_return = note("test: ktune::gemm returned " + f.status.to_string());
  if (f.status.ok()) {
    f.cuda_error = cuda_err(cudaEventRecord(gemm_done, caller), "cudaEventRecord");
    if (f.cuda_error.empty())
      f.cuda_error = cuda_err(cudaMemcpyAsync(fresh_img, fresh_p.D.dev, fresh_p.D.image.size(), cudaMemcpyDeviceToHost, caller),
                              "cudaMemcpyAsync D2H (caller)");
    if (f.cuda_error.empty()) f.cuda_error = cuda_err(cudaEventRecord(copy_done, caller), "cudaEventRecord");
  }
  const double t_enqueued = note("test: event, copy of D, event enqueued on the caller's stream");
  // Poll (no blocking call) until both events completed or the deadline passed; -1: not completed.
  double t_gemm_done = -1, t_copy_done = -1;
  if (f.status.ok() && f.cuda_error.empty())
    for (;;) {
      if (t_gemm_done < 0 && cudaEventQuery(gemm_done) == cudaSuccess) t_gemm_done = note("test: the new key's GEMM completed on the GPU");
      if (t_copy_done < 0 && cudaEventQuery(copy_done) == cudaSuccess) t_copy_done = note("test: the copy of D completed");
      if ((t_gemm_done >= 0 && t_copy_done >= 0) || since_spin() > kDeadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  (void)cudaGetLastError();  // cudaErrorNotReady from the polls
  const bool behind_finished_early = behind_done.load();
  note("test: releasing the spinner");
  *reinterpret_cast<volatile int*>(flag) = 1;  // release the spinner
  other.join();
  KT_CUDA(cudaStreamSynchronize(caller));
  KT_CUDA(cudaStreamSynchronize(busy));
  int result = -1;
  KT_CUDA(cudaMemcpy(&result, dresult, sizeof(int), cudaMemcpyDeviceToHost));
  const auto tuned = default_tuner().counters().tunings - tunings_before;
  default_tuner().set_options(saved_options);  // the sink refers to this test's locals

  // Which step waited, in words.
  auto secs = [](double t) { return std::to_string(t) + " s"; };
  std::string steps = "ktune::gemm() (tuning + launch) returned after " + secs(t_return - t_call) + " on the host";
  if (t_return > kDeadline) steps += " [WAITED: a call inside ktune::gemm() blocked the host until the spinner ended]";
  steps += "; event/copy enqueue took " + secs(t_enqueued - t_return);
  if (t_enqueued > kDeadline) steps += " [WAITED: enqueuing the copy of D blocked the host]";
  if (t_gemm_done >= 0) steps += "; the GEMM completed on the GPU " + secs(t_gemm_done - t_return) + " after the call returned" +
                                 (t_gemm_done > kDeadline ? " [WAITED: only after the spinner ended]" : "");
  else steps += "; the GEMM had NOT completed on the GPU " + secs(kDeadline) + " after the spinner started [WAITED: device-side "
                "dependency of the caller's stream on the busy stream, e.g. work on the legacy default stream]";
  if (t_copy_done >= 0) steps += "; the copy of D completed " + secs(t_copy_done - t_return) + " after the call returned" +
                                 (t_copy_done > kDeadline ? " [WAITED: only after the spinner ended]" : "");
  else steps += std::string("; the ") + (pageable ? "pageable" : "pinned") + " copy of D had not completed by the deadline";
  std::string lines;
  {
    std::lock_guard lock(log_mu);
    for (const auto& l : timeline) lines += l + "\n";
  }
  MESSAGE("new key tuned while the other stream was busy; tunings: " << tuned << "; " << steps);

  if (f.status.ok() && f.cuda_error.empty()) f.check = check_result(fresh_p, std::vector<unsigned char>(fresh_img, fresh_img + fresh_p.D.image.size()));
  check_outcome(f, "the new key, tuned while the other stream was busy");
  CHECK_MESSAGE(tuned == 1, "the new key was expected to be tuned now (was it tuned before?)");
  // Tuning and the new key's GEMM finished while `busy` was still spinning, and the spinner saw the flag.
  const bool no_wait = t_return <= kDeadline && t_enqueued <= kDeadline && t_gemm_done >= 0 && t_gemm_done <= kDeadline &&
                       t_copy_done >= 0 && t_copy_done <= kDeadline;
  CHECK_MESSAGE(no_wait, "tuning a new key waited for another stream's kernel: " << steps
                             << "\nthe tuner's log and the test's steps, in seconds since the spinner started:\n" << lines);
  CHECK_MESSAGE(result == 1, "the spinner timed out (5 s) instead of seeing the flag: " << steps << "\n" << lines);
  CHECK_FALSE(behind_finished_early);  // the GEMM queued behind the spinner did wait for it
  if (behind.status.ok() && behind.cuda_error.empty())
    behind.check = check_result(behind_p, std::vector<unsigned char>(behind_img, behind_img + behind_p.D.image.size()));
  check_outcome(behind, "the GEMM queued on the busy stream behind the spinner");

  KT_CUDA(cudaDeviceSynchronize());
  for (void* p : keep) cudaFree(p);
  cudaFree(dresult);
  cudaFreeHost(flag);
  if (!pageable) {
    cudaFreeHost(behind_img);
    cudaFreeHost(fresh_img);
  }
  cudaEventDestroy(gemm_done);
  cudaEventDestroy(copy_done);
  KT_CUDA(cudaStreamDestroy(busy));
  KT_CUDA(cudaStreamDestroy(caller));
}

// Runs only as a child process (see the next test). ktune's workspace for a split-K launch grows on the
// caller's stream; the device's default memory pool could satisfy that growth with a block another
// stream freed but has not reached yet, making the caller's stream wait for that stream. ktune's own
// pool (workspace.hpp, private_mem_pool) never does: here a 64 MiB block is freed on `busy` behind a
// spinning kernel, and a split-K GEMM whose workspace must grow on `caller` completes meanwhile.
TEST_CASE("concurrency GPU child: a call's workspace growth does not wait for another stream's pending free") {
  if (std::getenv("KTUNE_TEST_CHILD_NO_WAIT") == nullptr) return;
  const Spec spec{"f16 tn split-K", DType::f16, Compute::f32, Layout::row, Layout::col, 64, 128, 2048, DType::f16, {}};
  DeviceInfo dev;
  REQUIRE(current_device(dev).ok());
  GemmLaunchOptions lo;
  lo.split_k = 4;
  lo.split_mode = SplitKMode::parallel;  // fp32 partials in the workspace: the largest need
  const GemmDesc rd = resolved(desc_of(spec));
  const GemmKernelEntry* entry = nullptr;
  for (const auto& e : gemm_table().entries())
    if (!is_route(e) && e.workspace_size != nullptr && e.config.math == MathOp::mma_f16 &&
        can_implement(e, rd, GemmAlignment{8, 8, 8}, &dev).ok() && check_launch_options(e, lo).ok() &&
        workspace_bytes_for(e, rd, lo) > 0) {
      entry = &e;
      break;
    }
  if (entry == nullptr) {
    MESSAGE("no split-K f16 tn instance on this device");
    return;
  }
  GemmOptions opt;
  opt.instance = entry->name.data();
  opt.launch = lo;
  cudaStream_t busy = nullptr, caller = nullptr, warm = nullptr;
  KT_CUDA(cudaStreamCreateWithFlags(&busy, cudaStreamDefault));
  KT_CUDA(cudaStreamCreateWithFlags(&caller, cudaStreamDefault));
  KT_CUDA(cudaStreamCreateWithFlags(&warm, cudaStreamNonBlocking));
  std::vector<void*> keep;
  // The instance runs once on a third stream (its shared-memory attribute set, its module loaded):
  // what follows differs only in the workspace, which `caller` does not have yet.
  const Prepared warm_p = prepare(spec, 21, warm, keep);
  REQUIRE_MESSAGE(warm_p.out.cuda_error.empty(), warm_p.out.cuda_error);
  REQUIRE(gemm(warm_p.d, warm_p.ops, warm, opt).ok());
  const Prepared p = prepare(spec, 22, caller, keep);
  REQUIRE_MESSAGE(p.out.cuda_error.empty(), p.out.cuda_error);
  unsigned char* img = nullptr;
  KT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&img), p.D.image.size()));
  cudaEvent_t done = nullptr;
  KT_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  int* flag = nullptr;
  int* dflag = nullptr;
  int* dresult = nullptr;
  KT_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped));
  KT_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0));
  KT_CUDA(cudaMalloc(&dresult, sizeof(int)));
  KT_CUDA(cudaDeviceSynchronize());
  *reinterpret_cast<volatile int*>(flag) = 0;

  constexpr double kDeadline = 3.0;
  const auto start = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  launch_spin_until_flag(dflag, 5'000'000'000ull, dresult, busy);
  KT_CUDA(cudaGetLastError());
  // A block of the device's default pool, freed in `busy`'s order: only once the spinner ends.
  void* pending = nullptr;
  KT_CUDA(cudaMallocAsync(&pending, std::size_t{64} << 20, busy));
  KT_CUDA(cudaFreeAsync(pending, busy));
  const Status st = gemm(p.d, p.ops, caller, opt);  // grows `caller`'s workspace
  const double t_return = since();
  double t_done = -1;
  if (st.ok()) {
    KT_CUDA(cudaEventRecord(done, caller));
    while (since() < kDeadline)
      if (cudaEventQuery(done) == cudaSuccess) {
        t_done = since();
        break;
      }
    (void)cudaGetLastError();
  }
  *reinterpret_cast<volatile int*>(flag) = 1;
  KT_CUDA(cudaMemcpyAsync(img, p.D.dev, p.D.image.size(), cudaMemcpyDeviceToHost, caller));
  KT_CUDA(cudaStreamSynchronize(caller));
  KT_CUDA(cudaStreamSynchronize(busy));
  int result = -1;
  KT_CUDA(cudaMemcpy(&result, dresult, sizeof(int), cudaMemcpyDeviceToHost));

  const std::string steps = std::string(entry->name) + " split_k=4 (parallel), workspace " +
                            std::to_string(workspace_bytes_for(*entry, rd, lo)) + " bytes: gemm() returned after " +
                            std::to_string(t_return) + " s, the GEMM completed " +
                            (t_done >= 0 ? "after " + std::to_string(t_done) + " s" : "NOT within " + std::to_string(kDeadline) + " s");
  MESSAGE(steps);
  CHECK_MESSAGE(st.ok(), st.to_string());
  CHECK_MESSAGE((t_return <= kDeadline && t_done >= 0), "the GEMM waited for another stream's pending free: " << steps);
  CHECK(result == 1);
  Outcome o = p.out;
  o.status = st;
  o.ran = true;
  if (st.ok()) o.check = check_result(p, std::vector<unsigned char>(img, img + p.D.image.size()));
  check_outcome(o, "split-K GEMM whose workspace grew while another stream was busy");

  KT_CUDA(cudaDeviceSynchronize());
  for (void* q : keep) cudaFree(q);
  cudaFree(dresult);
  cudaFreeHost(flag);
  cudaFreeHost(img);
  cudaEventDestroy(done);
  KT_CUDA(cudaStreamDestroy(busy));
  KT_CUDA(cudaStreamDestroy(caller));
  KT_CUDA(cudaStreamDestroy(warm));
}

// The no-wait test in a child process, with eager module loading: lazily loading a kernel (CUDA's
// default) may synchronise the context, so the first launch of an instance never used before would wait
// for the spinning kernel whatever the tuner does. Then again with lazy loading, for information only.
TEST_CASE("concurrency GPU: tuning a new key neither waits for another stream's work nor disturbs it") {
  if (std::getenv("KTUNE_TEST_CHILD_NO_WAIT") != nullptr) return;
  char exe[4096] = {};
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  REQUIRE(len > 0);
  const std::string log = (std::filesystem::temp_directory_path() / ("ktune_no_wait_" + std::to_string(::getpid()) + ".log")).string();
  auto run_child = [&](const char* loading, std::string& output) {
    const std::string cmd = "KTUNE_TEST_CHILD_NO_WAIT=1 CUDA_MODULE_LOADING=" + std::string(loading) + " '" +
                            std::string(exe, static_cast<std::size_t>(len)) +
                            "' -tc='concurrency GPU child*' > '" + log + "' 2>&1";
    const int status = std::system(cmd.c_str());
    std::ifstream f(log);
    std::stringstream text;
    text << f.rdbuf();
    output = text.str();
    std::filesystem::remove(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string eager, lazy;
  const int rc = run_child("EAGER", eager);
  CHECK_MESSAGE(rc == 0, "child (CUDA_MODULE_LOADING=EAGER) exit " << rc << ":\n" << eager);
  if (rc == 0) MESSAGE("CUDA_MODULE_LOADING=EAGER: passed\n" << eager);
  const int rc_lazy = run_child("LAZY", lazy);
  MESSAGE("for information, CUDA_MODULE_LOADING=LAZY: exit " << rc_lazy << "\n" << lazy);
}
