// Write-bandwidth probe for 8192x8192x64 (a 128 MB bf16 store): what the H200 gives for store forms
// (memset, linear 8/16-byte stores, st.global.cs, TMA-engine bulk copies from shared memory) and for the
// sm90 GEMM's tile pattern (persistent CTAs writing 256x128 / 128x256 tiles, row-major or grouped tile
// order). Standalone, not part of the build (bench/*.cu are host code):
//   nvcc -O3 -arch=sm_90a -std=c++17 bench/probes/write_ceiling.cu -o write_ceiling && ./write_ceiling
// Results: notes/sm90-gemm.md ("Identity store of 16-bit D").
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda/ptx>

#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int M = 8192, N = 8192;  // bf16 D: rows of 16 KB
constexpr size_t BYTES = size_t(M) * N * 2;

__global__ void lin16(uint4* p, size_t n, int cs) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = make_uint4(unsigned(i), unsigned(i) * 3u, unsigned(i) ^ 0x5555u, unsigned(i) + 7u);
    if (cs) __stcs(p + i, v); else p[i] = v;
  }
}
__global__ void lin8(uint2* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_uint2(unsigned(i), unsigned(i) * 3u);
}

// Tile pattern of the sm90 kernel: persistent CTAs walk BMxBN tiles (bf16) in raster order `group`
// (0: row-major tiles, g>0: grouped by g tile rows); 8 warps; each warp owns rows; vec = bytes per lane
// (8: a warp instruction covers 4 rows x 64 B like the 16x32 staged chunk; 16: 2 rows x 256 B).
template <int BM, int BN>
__global__ void tiles(char* d, int group, int vec, int cs, int tiles_per_cta_limit) {
  const int tm = M / BM, tn = N / BN, total = tm * tn;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  constexpr int row_bytes = BN * 2;
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    int mt, nt;
    if (group == 0) { mt = t / tn; nt = t % tn; }
    else { const int per = group * tn, g = t / per, r = t % per; mt = g * group + r % group; nt = r / group; }
    char* base = d + size_t(mt) * BM * N * 2 + size_t(nt) * row_bytes;
    if (vec == 16) {
      constexpr int lanes_per_row = row_bytes / 16;
      for (int idx = warp * 32 + lane; idx < BM * lanes_per_row; idx += warps * 32) {
        const int r = idx / lanes_per_row, c = idx % lanes_per_row;
        uint4 v = make_uint4(idx, t, r, c);
        uint4* q = reinterpret_cast<uint4*>(base + size_t(r) * N * 2 + c * 16);
        if (cs) __stcs(q, v); else *q = v;
      }
    } else {
      // each warp: a 16-row band, chunks of 32 columns (64 B per row): 8 lanes per row, 4 rows per instr
      for (int band = warp; band < BM / 16; band += warps)
        for (int ch = 0; ch < BN / 32; ++ch)
#pragma unroll
          for (int pass = 0; pass < 4; ++pass) {
            const int r = band * 16 + pass * 4 + lane / 8, c = ch * 64 + (lane % 8) * 8;
            uint2 v = make_uint2(r, c);
            uint2* q = reinterpret_cast<uint2*>(base + size_t(r) * N * 2 + c);
            if (cs) __stcs(q, v); else *q = v;
          }
    }
  }
}

// Bulk (TMA engine) stores from shared memory: per tile row a 1-D cp.async.bulk of BN*2 bytes, issued
// by one lane per warp, two buffers per warp.
template <int BM, int BN>
__global__ void bulk(char* d, int group) {
  extern __shared__ __align__(128) char sm[];
  const int tm = M / BM, tn = N / BN, total = tm * tn;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  constexpr int row_bytes = BN * 2, band = 16;
  char* buf = sm + warp * 2 * band * row_bytes;
  int k = 0;
  for (int t = blockIdx.x; t < total; t += gridDim.x) {
    int mt, nt;
    if (group == 0) { mt = t / tn; nt = t % tn; }
    else { const int per = group * tn, g = t / per, r = t % per; mt = g * group + r % group; nt = r / group; }
    char* base = d + size_t(mt) * BM * N * 2 + size_t(nt) * row_bytes;
    for (int b = warp; b < BM / band; b += warps, ++k) {
      char* my = buf + (k & 1) * band * row_bytes;
      if (lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<1>{});
      __syncwarp();
      for (int i = lane; i < band * row_bytes / 16; i += 32) reinterpret_cast<uint4*>(my)[i] = make_uint4(i, t, b, k);
      cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
      __syncwarp();
      if (lane < band) {
        cuda::ptx::cp_async_bulk(cuda::ptx::space_global, cuda::ptx::space_shared,
                                 base + size_t(b * band + lane) * N * 2, my + lane * row_bytes, row_bytes);
      }
      if (lane < band) cuda::ptx::cp_async_bulk_commit_group();
    }
  }
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
}

template <class F>
void timeit(const char* name, F&& launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { std::printf("%-44s error %s\n", name, cudaGetErrorString(e)); return; }
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < 10; ++i) launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms / 10);
  }
  std::sort(t.begin(), t.end());
  std::printf("%-44s %8.2f us %7.0f GB/s\n", name, t[3] * 1e3, BYTES / (t[3] * 1e-3) / 1e9);
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  const int sms = p.multiProcessorCount;
  char* d = nullptr;
  cudaMalloc(&d, BYTES);
  std::printf("write probe: %s, %d SMs, %zu MB bf16 8192x8192\n", p.name, sms, BYTES >> 20);
  timeit("cudaMemsetAsync", [&] { cudaMemsetAsync(d, 1, BYTES); });
  for (int bps : {4, 8, 16}) {
    char n[64];
    std::snprintf(n, 64, "linear 16B, %d x 256 thr/SM", bps);
    timeit(n, [&] { lin16<<<sms * bps, 256>>>((uint4*)d, BYTES / 16, 0); });
    std::snprintf(n, 64, "linear 16B st.cs, %d x 256 thr/SM", bps);
    timeit(n, [&] { lin16<<<sms * bps, 256>>>((uint4*)d, BYTES / 16, 1); });
  }
  timeit("linear 8B, 8 x 256 thr/SM", [&] { lin8<<<sms * 8, 256>>>((uint2*)d, BYTES / 8); });
  for (int group : {0, 8}) {
    for (int vec : {8, 16})
      for (int cs : {0, 1}) {
        char n[80];
        std::snprintf(n, 80, "tiles 256x128 1CTA/SM 256thr g%d v%d%s", group, vec, cs ? " cs" : "");
        timeit(n, [&] { tiles<256, 128><<<sms, 256>>>(d, group, vec, cs, 0); });
      }
    char n[80];
    std::snprintf(n, 80, "tiles 128x256 1CTA/SM 256thr g%d v8", group);
    timeit(n, [&] { tiles<128, 256><<<sms, 256>>>(d, group, 8, 0, 0); });
    std::snprintf(n, 80, "tiles 256x128 2CTA/SM 256thr g%d v8", group);
    timeit(n, [&] { tiles<256, 128><<<2 * sms, 256>>>(d, group, 8, 0, 0); });
    std::snprintf(n, 80, "tiles 256x128 1CTA/SM 512thr g%d v8", group);
    timeit(n, [&] { tiles<256, 128><<<sms, 512>>>(d, group, 8, 0, 0); });
    const int smem = 8 * 2 * 16 * 256;
    cudaFuncSetAttribute(bulk<256, 128>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    std::snprintf(n, 80, "bulk rows 256x128 1CTA/SM 256thr g%d", group);
    timeit(n, [&] { bulk<256, 128><<<sms, 256, smem>>>(d, group); });
  }
  cudaFree(d);
  return 0;
}
