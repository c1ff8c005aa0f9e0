# limit: 90
# (Kept here because gpu-requests/ is git-ignored: copy it into gpu-requests/ and run scripts/gpu-batch.sh.)
# s10 (n-bn96): non-power-of-two N wgmma tiles as probes (tools/sm90-probes: 64x112x64 s9 w64x112, 128x96x64 s7
# w64x96, and 192x64x64 s6 w192x64 = cuBLASLt's L10 tile in ktune's orientation) against cuBLASLt on the small
# ResNet 1x1 GEMMs, next to the default instances cuBLASLt beat there. Correctness: every launch is checked
# against cuBLASLt and a float64 reference (FAIL / "N failure(s)"); --small = 264x392x200 on 2 CTAs (partial
# M and N tiles, ring wrap); --bias-relu = cuDNN's fused epilogue. notes/sm90-gemm.md "Session 10".
# Build: build-gpu (the batch's default build) gets the probe target with only these 3 probe TUs
# (KTUNE_SM90_PROBE_FILTER) and is set back afterwards: a fresh build directory would recompile every
# instance (~1400 s of CPU), which does not fit this limit.
set -u
T0=$(date +%s)
cmake -S . -B build-gpu -DKTUNE_BUILD_SM90_PROBES=ON "-DKTUNE_SM90_PROBE_FILTER=n112|n96|m192" > $OUT/configure.log 2>&1 &&
  cmake --build build-gpu -j16 --target ktune-sm90-probes > $OUT/build.log 2>&1
rc=$?
# build-gpu as the batch left it (the options only add or drop the probe target: no other command changes)
cmake -S . -B build-gpu -DKTUNE_BUILD_SM90_PROBES=OFF -DKTUNE_SM90_PROBE_FILTER= >> $OUT/configure.log 2>&1
echo "probe build rc=$rc at $(( $(date +%s) - T0 )) s"
[ $rc -eq 0 ] || { tail -40 $OUT/build.log; exit 1; }
P=build-gpu/ktune-sm90-probes
F="--filter _n112_ --filter _n96_ --filter _m192_ --filter tn_128x64x64 --filter tn_64x128x64 --filter tn_128x128x64_w64x128 --filter tn_pp_128x128x64"
timeout 10 $P --small $F > $OUT/small.log 2>&1; echo "small rc=$?"; grep -E "FAIL|failure" $OUT/small.log
timeout 10 $P --small --bias-relu $F > $OUT/small-bias.log 2>&1; echo "small bias-relu rc=$?"; grep -E "FAIL|failure" $OUT/small-bias.log
for s in 1568x512x2048 6272x256x1024; do
  timeout 20 $P --gemm $s --paired --repeats 7 --ms 2 --cluster 1,2 --bias-relu $F > $OUT/$s-bias.log 2>&1; echo "$s bias-relu rc=$?"
  grep -vE "^ {4,}" $OUT/$s-bias.log | cut -c1-190
  timeout 15 $P --gemm $s --paired --repeats 7 --ms 2 $F > $OUT/$s.log 2>&1; echo "$s identity rc=$?"
  grep -E "^[ !] |^best|failure" $OUT/$s.log | cut -c1-190
done
echo "total $(( $(date +%s) - T0 )) s"
