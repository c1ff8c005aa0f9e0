# limit: 560
# The box store of 16-bit D through stmatrix (KTUNE_SM90_STMATRIX_BOX_STORE=1, gemm/kernel/sm90/epilogue.cuh
# store_tile_async: two stmatrix.x4 per 8x64 box and warp instead of eight 32-bit STS per thread, as cuDNN's Hopper
# fprop epilogue; off by default, sm_90a SASS of the default build unchanged). First on a GPU: the GPU tests of
# the "on" build (every instance on every problem: the ping-pong and swap-AB tiles store through it), then an
# A/B against the default build: build-gpu/ when a gpu-check left it on this machine, else a fresh build.
# ncu of session 18: the ping-pong 256x64 conv tile idles its tensor pipe 53% of the cycles; cuDNN stages its
# epilogue with STSM.16.M88.4 (notes/conv2d.md "Session 18").
set -u
T0=$(date +%s)
ON=build-stm-on
OFF=build-gpu; [ -x $OFF/ktune-conv-bench ] && [ -x $OFF/ktune-profile ] || OFF=build-stm-off
cfg() {  # dir, extra CUDA flags
  cmake -S . -B $1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=ON -DKTUNE_BUILD_BENCH=OFF \
    -DKTUNE_BUILD_EXAMPLES=OFF "-DCMAKE_CUDA_FLAGS=$2" > $OUT/cfg-$1.log 2>&1; echo "cfg $1 rc=$?"
}
cfg $ON "-DKTUNE_SM90_STMATRIX_BOX_STORE=1"
[ $OFF = build-stm-off ] && cfg $OFF ""
cmake --build $ON --target ktune_gpu_tests ktune-conv-bench ktune-profile -j 16 > $OUT/build-on.log 2>&1; echo "build on rc=$? $(( $(date +%s) - T0 )) s"
[ $OFF = build-stm-off ] && { cmake --build $OFF --target ktune-conv-bench ktune-profile -j 16 > $OUT/build-off.log 2>&1; echo "build off rc=$? $(( $(date +%s) - T0 )) s"; }
timeout 220 $ON/ktune_gpu_tests > $OUT/gpu-tests-on.txt 2>&1; echo "gpu tests (on) rc=$? $(( $(date +%s) - T0 )) s"
tail -4 $OUT/gpu-tests-on.txt; grep -B3 -A8 "ERROR" $OUT/gpu-tests-on.txt | head -30
for r in 1 2; do
  for v in $OFF $ON; do
    timeout 40 $v/ktune-conv-bench --n 256 --layer 2,11,14 --all --only pp_ > $OUT/conv-$v-r$r.txt 2>&1
    echo "== conv $v r$r rc=$?"; grep -E "^ +[0-9.]+ us +err" $OUT/conv-$v-r$r.txt | cut -c1-130 | head -12
    timeout 30 $v/ktune-profile --gemm 4096x4096x4096 --dtype bf16 --no-ref-check --repeats 5 --no-paired --filter _pp_ > $OUT/gemm-$v-r$r.txt 2>&1
    echo "-- gemm $v r$r rc=$?"; grep -E "^[ *]+ktune_gemm_sm90" $OUT/gemm-$v-r$r.txt | cut -c1-130
  done
done
echo "total $(( $(date +%s) - T0 )) s"
