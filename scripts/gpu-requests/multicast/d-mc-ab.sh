# limit: 150
# bench_conv at N = 32 (ktune::conv2d tuned vs cuDNN fused, same process) with the tuner proposing multicast
# clusters up to 8 (KTUNE_CONV_TUNED_MULTICAST=8) and, for the A/B, the default (pairs only). Fresh tuning cache each.
set -u
for mc in 8 2; do
  KTUNE_CACHE=$OUT/cache-mc$mc.json KTUNE_CONV_TUNED_MULTICAST=$mc timeout 70 build-gpu/ktune_bench_bench_conv \
    --benchmark_filter='n32/.*/(ktune|cudnn_fused)' --benchmark_min_time=0.05s \
    --benchmark_out=$OUT/bench_conv-mc$mc.json --benchmark_out_format=json > $OUT/bench_conv-mc$mc.log 2>&1
  echo "mc$mc rc=$?"; grep -iE "geomean|error" $OUT/bench_conv-mc$mc.log | head -5
done
grep -h "@mc" $OUT/cache-mc8.json | head -20
