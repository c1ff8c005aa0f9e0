# limit: 150
# (Kept here because gpu-requests/ is git-ignored: copy it into gpu-requests/ and run scripts/gpu-batch.sh.)
# swap-general-ab (session 11, not run: the session's device time was spent): is the swap 64x112 tile's
# slowdown (L13 1568x512x2048: 8.5 us as the 29177a5 probe, 10.3-10.4 us at 4d6d459, probe and family alike)
# the general epilogue path that ac0431e added to store_tile_swapped (SASS 4,232 -> 16,472 instructions,
# 122 -> 148 registers: GELU/SiLU/clamp/C/residual unrolled over every accumulator group)? Builds the probes
# in a second build directory with that path compiled out (-DKTUNE_SM90_SWAP_GENERAL=0; the guard is a
# two-line patch applied here to a copy of the tree, not in the library) and times both trees' swap probes
# paired with cuBLASLt. Correctness is checked by the probe tool on every launch (identity, bias+ReLU).
set -u
T0=$(date +%s)
rm -rf /tmp/swapab && mkdir -p /tmp/swapab && tar --exclude="./build*" --exclude=./.git --exclude=./gpu-requests --exclude=./bench/results -cf - . | tar xf - -C /tmp/swapab
python3 - <<'PY'
p='/tmp/swapab/include/ktune/gemm/kernel/sm90/epilogue.cuh'
s=open(p).read()
i=s.index("  const bool general = "); j=s.index(";", i)
s=s[:i]+s[i:j].replace("const bool general = ", "const bool general = KTUNE_SM90_SWAP_GENERAL && (")+")"+s[j:]
s=s.replace("template <class ML, class TOut>\n__device__ __forceinline__ void store_tile_swapped",
            "#ifndef KTUNE_SM90_SWAP_GENERAL\n#define KTUNE_SM90_SWAP_GENERAL 1\n#endif\ntemplate <class ML, class TOut>\n__device__ __forceinline__ void store_tile_swapped", 1)
open(p,'w').write(s)
PY
for v in 1 0; do
  cmake -S /tmp/swapab -B /tmp/swapab/b$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF \
    -DKTUNE_BUILD_EXAMPLES=OFF -DKTUNE_BUILD_SM90_PROBES=ON -DKTUNE_SM90_PROBE_FILTER=swap "-DCMAKE_CUDA_FLAGS=-DKTUNE_SM90_SWAP_GENERAL=$v" > $OUT/conf$v.log 2>&1
  cmake --build /tmp/swapab/b$v -j16 --target ktune-sm90-probes > $OUT/build$v.log 2>&1; echo "general=$v build rc=$? at $(( $(date +%s) - T0 )) s"
done
for s in 1568x512x2048 6272x256x1024; do for v in 1 0; do
  timeout 15 /tmp/swapab/b$v/ktune-sm90-probes --gemm $s --paired --repeats 9 --ms 2 --filter _swap_ --filter tn_128x64x64 > $OUT/$s-g$v.log 2>&1
  echo "$s general=$v rc=$?"; grep -E "^[ !] |^best|failure" $OUT/$s-g$v.log | cut -c1-150
done; done
echo "total $(( $(date +%s) - T0 )) s"
