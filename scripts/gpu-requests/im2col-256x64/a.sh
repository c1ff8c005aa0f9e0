# limit: 470
# First GPU run of the 256x64 TMA im2col tile (branch s17-im2col-256x64): conv GPU tests, sanitizers on it,
# then conv-bench --all --multicast on the many-wave 3x3 layers, where the im2col boxes from L2 look like the
# limit (N = 256 56² 64→64 3×3: pp 128x64 181 µs = 24 KB per 128x64x64 k-tile, ~7.5 TB/s from L2; a 256-row
# tile reads 20 KB per 128 rows, multicast pairs of 128x64 as much).
set -u
T0=$(date +%s)
B=build-s17
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=ON \
  -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune_gpu_tests ktune-conv-bench ktune_sanitize_driver -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"
tail -2 $OUT/build.log
timeout 150 $B/ktune_gpu_tests -tc="conv2d*" > $OUT/gpu-conv-tests.txt 2>&1; echo "conv gpu tests rc=$? $(( $(date +%s) - T0 )) s"
tail -4 $OUT/gpu-conv-tests.txt; grep -B3 -A8 "ERROR" $OUT/gpu-conv-tests.txt | head -30
for tool in racecheck synccheck memcheck; do
  timeout 50 compute-sanitizer --tool $tool $B/ktune_sanitize_driver --kind conv --filter im2col_256x64 > $OUT/san-$tool.txt 2>&1
  echo "sanitize $tool rc=$?"; tail -2 $OUT/san-$tool.txt
done
for n in 256 32; do
  layers=2,6,9,5; [ $n = 32 ] && layers=2,6,9
  timeout 100 $B/ktune-conv-bench --n $n --layer $layers --all --multicast > $OUT/conv-n$n.txt 2>&1
  echo "conv-bench n$n rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "^L|^ +[0-9.]+ us +err" $OUT/conv-n$n.txt | grep -vE "sm80|swap|g1x1|gemm_sm90" | cut -c1-120 | head -60
done
echo "total $(( $(date +%s) - T0 )) s"
