# limit: 540
# A/B of two trees (gpu-requests/ab/<variant>.tar, made with git archive) on the small Hopper tiles: conv-bench on
# the weak N = 32 layers and ktune-profile on small and large GEMMs, 3 alternating rounds, each in its own process.
set -u
VARIANTS=${VARIANTS:-"main s16-early-full-wait"} ROUNDS=${ROUNDS:-3}
TARDIR=gpu-requests/ab TARGETS="ktune-profile ktune-conv-bench" JOBS=8
source scripts/gpu-requests/ab-build.sh
one_round() {  # round, variant
  local r=$1 v=$2
  timeout 60 build-ab-$v/ktune-conv-bench --n 32 --layer 12,13,1,2 --all > $OUT/conv-r$r-$v.txt 2>&1
  echo "== conv r$r $v rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^L|^ +[0-9.]+ us +err" $OUT/conv-r$r-$v.txt | cut -c1-140 | head -12
  for g in 1024x1024x1024 128x4096x4096 4096x4096x4096; do
    timeout 40 build-ab-$v/ktune-profile --gemm $g --dtype bf16 --no-ref-check --repeats 5 --filter sm90 > $OUT/gemm-$g-r$r-$v.txt 2>&1
    echo "-- gemm $g r$r $v rc=$?"; grep -E "^bf16 tn" $OUT/gemm-$g-r$r-$v.txt | cut -c1-170
  done
}
ab_each_round one_round
# Is the small tile's ~0.27 µs per k-tile a local floor (one CTA's latency chain) or a shared limit (L2, with ~104
# CTAs)? The bf16 128x64 s8 GEMM tile alone on 1 CTA (128x64x65536: 1024 k-tiles) and on 104 CTAs
# (1664x512x16384: 13 x 8 tiles, 256 k-tiles each): µs per k-tile = time / k-tiles, both trees.
for v in $VARIANTS; do
  for g in 128x64x65536 1664x512x16384; do
    timeout 40 build-ab-$v/ktune-profile --gemm $g --dtype bf16 --no-ref-check --repeats 5 --no-paired \
      --filter 128x64x64_w64x64_s8 > $OUT/floor-$g-$v.txt 2>&1
    echo "-- floor $g $v rc=$?"; grep -E "^[ *]+ktune_gemm_sm90_wgmma_bf16_tn_128x64x64_w64x64_s8" $OUT/floor-$g-$v.txt | cut -c1-150 | head -2  # (s17: the old pattern matched the header lines only)
  done
done
echo "total $(( $(date +%s) - T0 )) s"
