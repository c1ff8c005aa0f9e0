# limit: 560
# First GPU run of the BK = 32 ping-pong 256x64 im2col tile (families.hpp Sm90ConvIm2colPingPongK32: 32 channels per
# k-tile, 64-byte swizzle rows, 10 stages of 20 KB; registered only with KTUNE_EXPERIMENTAL_CONV_K32=1): the conv
# GPU tests of that build (every conv instance, this one included, against float64), compute-sanitizer on it,
# then conv-bench on the 64-channel layers beside the BK = 64 tile (cuDNN's fastest kernel there is
# tilesize256x64x32: 127 µs against ktune's 134.6 under ncu at N = 256, session 18).
set -u
T0=$(date +%s)
B=build-k32
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=ON -DKTUNE_BUILD_BENCH=OFF \
  -DKTUNE_BUILD_EXAMPLES=OFF "-DCMAKE_CUDA_FLAGS=-DKTUNE_EXPERIMENTAL_CONV_K32=1" > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune_gpu_tests ktune-conv-bench ktune_sanitize_driver -j 16 > $OUT/build.log 2>&1
echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $OUT/build.log
timeout 150 $B/ktune_gpu_tests -tc="conv2d*" > $OUT/gpu-conv-tests.txt 2>&1; echo "conv gpu tests rc=$? $(( $(date +%s) - T0 )) s"
tail -4 $OUT/gpu-conv-tests.txt; grep -B3 -A8 "ERROR" $OUT/gpu-conv-tests.txt | head -30
for tool in racecheck synccheck memcheck; do
  timeout 40 compute-sanitizer --tool $tool $B/ktune_sanitize_driver --kind conv --filter 256x64x32 > $OUT/san.txt 2>&1
  echo "sanitize $tool rc=$?"; tail -2 $OUT/san.txt; cat $OUT/san.txt >> $OUT/sanitize-k32.txt
done
rm -f $OUT/san.txt
for n in 256 32; do
  timeout 90 $B/ktune-conv-bench --n $n --layer 1,2,4 --all > $OUT/conv-n$n.txt 2>&1
  echo "conv-bench n$n rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "^L|^ +[0-9.]+ us +err" $OUT/conv-n$n.txt | grep -v sm80 | cut -c1-130 | awk '/^L/{c=0} {if (c++ < 6) print}'
done
echo "total $(( $(date +%s) - T0 )) s"
