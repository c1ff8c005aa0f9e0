# limit: 560
# First GPU run of the session-17 candidates (rebuilt in session 18: the s17 branches were lost with the old
# checkout): ping-pong im2col 256x64 (w256x64 s5, cuDNN's one-warpgroup 256x64 schedule), swap im2col 64x256
# (s5), the 1x1 route on every 'tn' GEMM-table tile, and sm90_conv_cost's ping-pong model. One build: conv GPU
# tests, sanitizers on both new im2col tiles, conv-bench --all on the 64-filter, 3x3 and 1x1 layers at N = 256
# and N = 32, then the per-k-tile floor probe (128x64 s8 on 1 CTA vs 104 CTAs).
set -u
T0=$(date +%s)
B=build-s18
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=ON \
  -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune_gpu_tests ktune-conv-bench ktune_sanitize_driver ktune-profile -j 16 > $OUT/build.log 2>&1
echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $OUT/build.log
timeout 150 $B/ktune_gpu_tests -tc="conv2d*" > $OUT/gpu-conv-tests.txt 2>&1; echo "conv gpu tests rc=$? $(( $(date +%s) - T0 )) s"
tail -4 $OUT/gpu-conv-tests.txt; grep -B3 -A8 "ERROR" $OUT/gpu-conv-tests.txt | head -30
for f in im2col_pp_256x64 im2col_swap_64x256; do
  for tool in racecheck synccheck memcheck; do
    timeout 40 compute-sanitizer --tool $tool $B/ktune_sanitize_driver --kind conv --filter $f > $OUT/san.txt 2>&1
    echo "sanitize $f $tool rc=$?"; tail -2 $OUT/san.txt; cat $OUT/san.txt >> $OUT/sanitize-all.txt
  done
done
rm -f $OUT/san.txt
for n in 256 32; do
  layers=1,2,4,6,11,14; [ $n = 32 ] && layers=1,2,4,7,10,11,12,13,14
  timeout 110 $B/ktune-conv-bench --n $n --layer $layers --all > $OUT/conv-n$n.txt 2>&1
  echo "conv-bench n$n rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "^L|^ +[0-9.]+ us +err" $OUT/conv-n$n.txt | grep -v "sm80" | cut -c1-130 | awk '/^L/{c=0} {if (c++ < 7) print}'
done
for g in 128x64x65536 1664x512x16384; do
  timeout 30 $B/ktune-profile --gemm $g --dtype bf16 --no-ref-check --repeats 5 --no-paired \
    --filter 128x64x64_w64x64_s8 > $OUT/floor-$g.txt 2>&1
  echo "-- floor $g rc=$?"; grep -E "^[ *]+ktune_gemm_sm90_wgmma_bf16_tn_128x64x64_w64x64_s8" $OUT/floor-$g.txt | cut -c1-150 | head -2
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv > $OUT/nvidia-smi.txt 2>&1
echo "total $(( $(date +%s) - T0 )) s"
