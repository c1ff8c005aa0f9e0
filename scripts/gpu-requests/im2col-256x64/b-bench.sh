# limit: 280
# bench_conv (as gpu-check's step 4: tuned pick vs cuDNN fused, graph replay, cold-L2 rotation) at main with the
# 256x64 im2col tile, for the README figure; nothing else fits this session's device time.
set -u
T0=$(date +%s)
B=build-s17b
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF \
  -DKTUNE_BUILD_BENCH=ON -DKTUNE_BUILD_EXAMPLES=OFF -DKTUNE_GIT_COMMIT=${KCOMMIT:-unknown} > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune_bench_bench_conv -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"
tail -2 $OUT/build.log
timeout 120 $B/ktune_bench_bench_conv --benchmark_min_time=0.05s --benchmark_out=$OUT/bench_conv.json --benchmark_out_format=json > $OUT/bench_conv.log 2>&1
echo "bench_conv rc=$? $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $OUT/nvidia-smi.txt 2>&1
