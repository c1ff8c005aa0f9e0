# limit: 240
# Second look at 56² 3×3 64→64, N = 256 (a-ncu.sh: ktune pp 256x64 134.6 µs, cuDNN 127.1; neither L2-bound, cuDNN
# issues 1.6 IPC to ktune's 0.97): ncu's full set (stall reasons, pipe use, shared-memory wavefronts) for both.
# Then where the time of a tiny odd GEMM goes (127×257×131: ktune 9.9 µs on the repack route, cuBLASLt 4.3-6.8):
# ktune-profile --explain, the tuner's measurement of every candidate.
set -u
T0=$(date +%s)
B=build-ncu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF \
  -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune-conv-bench ktune-profile -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $OUT/build.log
run() {  # name, kernel regex, conv-bench --only text
  timeout 60 ncu --clock-control none --set full --import-source no -k "regex:$2" -c 1 $B/ktune-conv-bench --n 256 --layer 2 --all --only "$3" > $OUT/$1.txt 2>&1
  echo "== $1 rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "Duration|Stall|stall|Issued Warp|Executed Ipc|Shared Memory|Bank|Wavefronts|Pipe" $OUT/$1.txt | cut -c1-150 | head -30
}
for t in f16 bf16; do
  timeout 40 $B/ktune-profile --explain "$t tn 127x257x131" --max-candidates 0 > $OUT/explain-$t.txt 2>&1
  echo "== explain $t rc=$? $(( $(date +%s) - T0 )) s"; grep -iE "selected|slower|route|us|ms" $OUT/explain-$t.txt | cut -c1-160 | tail -30
done
run full-pp256x64 'conv_im2col_kernel' 'tma_im2col_pp_256x64x64_w256x64_s5_a8'
run full-cudnn 'xmma|cudnn|nvjet|cutlass|implicit' 'nomatch'
echo "total $(( $(date +%s) - T0 )) s"
