# limit: 240
# Why 7² 3×3 512→512 (N = 32) runs at 47% of wgmma peak per SM on 128x128 @ck2 (76% whole-K on half the SMs),
# 42% on 128x64, where cuDNN's 128x64 cluster-of-8 kernel reaches 57% (notes/conv2d.md "Session 14"): ncu of
# each beside cuDNN's fused kernel. --only keeps conv-bench from tuning, so the first launches of each kernel
# are the named tactic's. No clock control (the timings elsewhere run at the H200's own clocks).
set -u
S="--section SpeedOfLight --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats"
run() {  # name, kernel regex, conv-bench --only text
  timeout 70 ncu --clock-control none -k "regex:$2" -c 1 $S build-gpu/ktune-conv-bench --n 32 --layer 12 --all --splits 2 --multicast --only "$3" > $OUT/$1.txt 2>&1
  echo "$1 rc=$?"; grep -E "Duration|Grid Size|Cluster Size|Compute \(SM\) Throughput|Issue Slots Busy|Shared Memory|L2 Cache Throughput|Bank|Stall|Warp Cycles Per Issued" $OUT/$1.txt | head -24
}
run k128x128-ck2 'conv_im2col_kernel' '128x128x64_w64x128_s6_a8@ck2'
run k128x128 'conv_im2col_kernel' 'tma_im2col_128x128x64_w64x128_s6_a8'
run k128x64-mc2 'conv_im2col_kernel' 'tma_im2col_128x64x64_w64x64_s6_a8@mc2'
run cudnn 'xmma|cudnn|nvjet|cutlass' 'nomatch'
