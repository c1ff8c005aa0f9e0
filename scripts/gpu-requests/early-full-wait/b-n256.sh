# limit: 540
# Did the next-slot probe (28d086e) slow the ping-pong conv kernels at N = 256? bench_conv at cce6600 ran
# 56² 256→128 1×1 (im2col pp 128x128 s5) 163 → 180 µs and 56² 3×3 187 → 198 µs. Three trees
# (gpu-requests/ab2/<v>.tar): old = 0426ff1 (no probe), new = main (probe), nopp = probe except in ping-pong
# consumers; conv-bench --all on those layers, 2 alternating rounds, one log per tree (few files under $OUT).
set -u
VARIANTS=${VARIANTS:-"old new nopp"} ROUNDS=${ROUNDS:-2}
TARDIR=gpu-requests/ab2 TARGETS="ktune-conv-bench" JOBS=6
source scripts/gpu-requests/ab-build.sh
one_round() {  # round, variant: both batch sizes into one log per tree
  local r=$1 v=$2 n layers
  for n in 256 32; do
    layers=2,5,10,11; [ $n = 32 ] && layers=12,13
    echo "#### round $r tree $v n $n" >> $OUT/conv-$v.txt
    timeout 80 build-ab-$v/ktune-conv-bench --n $n --layer $layers --all >> $OUT/conv-$v.txt 2>&1
    echo "== r$r $v n$n rc=$? $(( $(date +%s) - T0 )) s"
  done
}
ab_each_round one_round
for v in $VARIANTS; do echo "== $v"; grep -E "^####|^L|^ +[0-9.]+ us +err" $OUT/conv-$v.txt | grep -E "^####|^L|pp_|swap_64x112|im2col_128x64x64_w64x64_s6" | cut -c1-120; done
echo "total $(( $(date +%s) - T0 )) s"
