# limit: 130
# compute-sanitizer racecheck and synccheck on the conv sanitizer target, which now runs every f16 Hopper
# instance in multicast clusters of 2 and (tma_im2col) 8, cluster split-K 2, @split3p / @split3s.
set -u
for tool in racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/ktune_gpu_tests -tc='conv2d: split-K sanitizer target' > $OUT/$tool.log 2>&1
  echo "$tool rc=$?"; tail -4 $OUT/$tool.log
done
