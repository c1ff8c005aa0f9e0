# limit: 90
# (Kept here because gpu-requests/ is git-ignored: copy it into gpu-requests/ and run scripts/gpu-batch.sh.)
# swap-ab: the "swap AB" sm90 probes (tools/sm90-probes: variants.cuh _swap_, Sm90Schedule::swap_ab): the kernel
# runs D^T = B·A^T, tiles in that swapped orientation: swap_64x112x64 s9 w64x112 (64 of our N x 112 of our M,
# cuBLASLt's L13 tile) and swap_128x96x64 s7 w64x96 (128 of N x 96 of M, cuBLASLt's L10 tile), the epilogue
# stores the tile transposed (epilogue.cuh: store_tile_swapped). Never run on a GPU before this request.
# Correctness first: every launch is checked against cuBLASLt and a float64 reference (FAIL / "N failure(s)").
#   --small = 264x392x200 on 2 CTAs: swapped M' = 392 = 6x64 + 8 and 3x128 + 8, N' = 264 = 2x112 + 40 and
#   2x96 + 72 (partial tiles both ways, ring wrap), identity and bias+ReLU, clusters 1 and 2;
#   1000x520x264: partial tiles both ways (16-byte vector stores), K = 4x64 + 8;
#   1000x524x264 bias+ReLU: N not a multiple of 8 (D rows not 16-byte aligned: the element-wise store path).
# Then the two ResNet 1x1 GEMMs cuBLASLt wins (paired rounds), next to the best default instances there.
# Build: build-gpu (the batch's default build) gets the probe target with only the swap probe TUs
# (KTUNE_SM90_PROBE_FILTER) and is set back afterwards (as n-bn96.sh).
set -u
T0=$(date +%s)
cmake -S . -B build-gpu -DKTUNE_BUILD_SM90_PROBES=ON "-DKTUNE_SM90_PROBE_FILTER=swap" > $OUT/configure.log 2>&1 &&
  cmake --build build-gpu -j16 --target ktune-sm90-probes > $OUT/build.log 2>&1
rc=$?
# build-gpu as the batch left it (the options only add or drop the probe target: no other command changes)
cmake -S . -B build-gpu -DKTUNE_BUILD_SM90_PROBES=OFF -DKTUNE_SM90_PROBE_FILTER= >> $OUT/configure.log 2>&1
echo "probe build rc=$rc at $(( $(date +%s) - T0 )) s"
[ $rc -eq 0 ] || { tail -40 $OUT/build.log; exit 1; }
P=build-gpu/ktune-sm90-probes
F="--filter _swap_ --filter tn_128x64x64 --filter tn_64x128x64 --filter tn_128x128x64_w64x128"
timeout 10 $P --small --cluster 1,2 $F > $OUT/small.log 2>&1; echo "small rc=$?"; grep -E "FAIL|failure" $OUT/small.log
timeout 10 $P --small --cluster 1,2 --bias-relu $F > $OUT/small-bias.log 2>&1; echo "small bias-relu rc=$?"; grep -E "FAIL|failure" $OUT/small-bias.log
timeout 10 $P --gemm 1000x520x264 --repeats 1 --ms 0.2 --cluster 1,2 $F > $OUT/odd520.log 2>&1; echo "1000x520x264 rc=$?"; grep -E "FAIL|failure" $OUT/odd520.log
timeout 10 $P --gemm 1000x524x264 --repeats 1 --ms 0.2 --cluster 1,2 --bias-relu $F > $OUT/odd524-bias.log 2>&1; echo "1000x524x264 bias-relu rc=$?"; grep -E "FAIL|failure" $OUT/odd524-bias.log
for s in 1568x512x2048 6272x256x1024; do
  timeout 20 $P --gemm $s --paired --repeats 7 --ms 2 --cluster 1,2 --bias-relu $F > $OUT/$s-bias.log 2>&1; echo "$s bias-relu rc=$?"
  grep -vE "^ {4,}" $OUT/$s-bias.log | cut -c1-190
  timeout 15 $P --gemm $s --paired --repeats 7 --ms 2 --cluster 1,2 $F > $OUT/$s.log 2>&1; echo "$s identity rc=$?"
  grep -E "^[ !] |^best|failure" $OUT/$s.log | cut -c1-190
done
echo "total $(( $(date +%s) - T0 )) s"
