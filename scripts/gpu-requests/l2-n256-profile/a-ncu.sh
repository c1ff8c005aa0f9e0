# limit: 420
# 56² 3×3 64→64 at N = 256 (GEMM 802816×64×576, 9 k-tiles per tile): the ping-pong 256x64 im2col tile runs 132.7
# µs, the cooperative 256x64 156.4, cuDNN fused ~126 (H200 s18). Before keeping the filters resident in shared
# memory (notes/conv2d.md "Session 18": 20% fewer bytes per k-tile), is the tile bound by what it reads from L2?
# ncu of both ktune tiles beside cuDNN's fused kernel: duration, L2 and shared-memory throughput, tensor-pipe use,
# the consumer and producer stall reasons. --only keeps conv-bench from tuning. No clock control.
set -u
T0=$(date +%s)
B=build-ncu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF \
  -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune-conv-bench -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $OUT/build.log
S="--section SpeedOfLight --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats"
run() {  # name, kernel regex, conv-bench --only text
  timeout 90 ncu --clock-control none -k "regex:$2" -c 1 $S $B/ktune-conv-bench --n 256 --layer 2 --all --only "$3" > $OUT/$1.txt 2>&1
  echo "== $1 rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "^  [a-z_]+.*\(|Duration|Grid Size|Cluster Size|Registers|Shared Memory Configuration Size|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Max Bandwidth|Mem Pipes Busy|Stall|Warp Cycles Per Issued" $OUT/$1.txt | cut -c1-150 | head -30
}
run pp256x64 'conv_im2col_kernel' 'tma_im2col_pp_256x64x64_w256x64_s5_a8'
run coop256x64 'conv_im2col_kernel' 'tma_im2col_256x64x64_w128x64_s5_a8'
run cudnn 'xmma|cudnn|nvjet|cutlass|implicit' 'nomatch'
echo "total $(( $(date +%s) - T0 )) s"
