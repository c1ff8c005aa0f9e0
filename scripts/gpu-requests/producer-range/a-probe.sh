# limit: 360
# A/B(/C...) of commits' conv kernels on one instance, without the full build: each commit's tree (git
# archive) with src/instances/ cut down to the f16 tma_im2col 128x64 instance (index 1 of Sm90ConvIm2col;
# PROBE_PART to change it), ktune-conv-bench built from each at once (~35-60 s on 16 cores), then run in
# turn, each beside cuDNN in its own process, ROUNDS times. VARIANTS: commits or branches (default: main and
# the session-15 branches, notes/conv2d.md "Session 15").
set -u
VARIANTS=${VARIANTS:-"main s15-producer-range s15-two-loaders s15-two-loaders-s8"} PROBE_PART=${PROBE_PART:-1} LAYERS=${LAYERS:-12,13,1}
ROUNDS=${ROUNDS:-3}
T0=$(date +%s)
i=0
names=()
for c in $VARIANTS; do
  t=v$i; i=$((i + 1)); names+=("$t")
  rm -rf build-probe-src/$t && mkdir -p build-probe-src/$t
  git archive "$c" | tar x -C build-probe-src/$t --exclude=bench/results || { echo "no commit $c"; exit 1; }
  rm -f build-probe-src/$t/src/instances/*.cu
  printf '#include "ktune/conv/families.hpp"\n#include "ktune/conv/instantiate.cuh"\nKTUNE_REGISTER_CONV_FAMILY_PART(ktune::families::Sm90ConvIm2col, %s, 8)\n' \
    "$PROBE_PART" > build-probe-src/$t/src/instances/conv_sm90_probe.cu
  echo "$t = $c ($(git rev-parse --short "$c"))" | tee -a $OUT/commits.txt
done
jobs_each=$(( 16 / ${#names[@]} )); (( jobs_each < 2 )) && jobs_each=2
for t in "${names[@]}"; do
  (cmake -S build-probe-src/$t -B build-probe-$t -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
     -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF -DKTUNE_GIT_COMMIT=probe-$t > $OUT/cfg-$t.log 2>&1 &&
   cmake --build build-probe-$t --target ktune-conv-bench -j $jobs_each > $OUT/build-$t.log 2>&1; echo "$t build rc=$? $(( $(date +%s) - T0 )) s") &
done
wait
for r in $(seq 1 "$ROUNDS"); do
  for t in "${names[@]}"; do
    timeout 30 build-probe-$t/ktune-conv-bench --n 32 --layer "$LAYERS" --all --multicast > $OUT/run$r-$t.txt 2>&1
    echo "run$r $t rc=$? $(( $(date +%s) - T0 )) s"
    grep -E "^L[0-9]|^ +[0-9.]+ us +err" $OUT/run$r-$t.txt | cut -c1-150 | head -24
  done
done
