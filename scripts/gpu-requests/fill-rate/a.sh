# limit: 300
# The TMA fill rate of one stage ring, no wgmma (tools/sm90-probes/fill.cu, ktune-sm90-probes --fill), against
# the kernels' own k-tile times: bf16 128x64 s8 0.192 µs per 64-deep k-tile on 1 CTA, 0.271 on 104 (H200 s18);
# the ping-pong 256x64 conv tile on 56² 3×3 64→64 at N = 256, 132.7 µs (tensor pipe busy 47% of its cycles).
# --hold: cycles a slot is held per k-tile, the tensor pipe's time at wgmma's full rate (128x64x64: 256,
# 128x256x64: 1024, 256x64x64: 512). --fill mma: the other side, wgmma alone on a resident stage per tile shape
# (the N = 64 tiles at the shared-memory read limit? notes/conv2d.md "Session 17"). Then ncu's kernel durations
# of the repack route on 127×257×131 (copy vs GEMM).
set -u
T0=$(date +%s)
B=build-fill
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF \
  -DKTUNE_BUILD_EXAMPLES=OFF -DKTUNE_BUILD_SM90_PROBES=ON -DKTUNE_SM90_PROBE_FILTER=none > $OUT/cfg.log 2>&1; echo "cfg rc=$?"
cmake --build $B --target ktune-sm90-probes ktune-profile -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $OUT/build.log
P=$B/ktune-sm90-probes
{
  timeout 40 $P --fill gemm --rows 128+64 --stages 8 --ctas 1,8,33,66,104,132 --hold 0,256 --ktiles 1024
  timeout 40 $P --fill gemm --rows 128+256 --stages 4 --ctas 1,66,132 --hold 0,1024 --ktiles 512
  timeout 40 $P --fill gemm --rows 256+128 --stages 4 --ctas 1,66,132 --hold 0,1024 --ktiles 512
  timeout 60 $P --fill conv --n 256 --stages 5 --ctas 1,33,66,132 --hold 0,512
  timeout 60 $P --fill conv --n 256 --stages 4 --ctas 1,132 --hold 0,512 --im2col-only 1
  timeout 30 $P --fill conv --n 32 --stages 5 --ctas 132 --hold 0,512
  timeout 60 $P --fill mma --ctas 1,132 --ktiles 4096
} > $OUT/fill.txt 2>&1
echo "fill rc=$? $(( $(date +%s) - T0 )) s"; cat $OUT/fill.txt
timeout 60 ncu --clock-control none --section SpeedOfLight -k "regex:repack_kernel|sm90|gemm_kernel" -c 6 $B/ktune-profile --gemm 127x257x131 --dtype f16 --no-ref-check \
  --repeats 1 --iters 1 --no-paired --filter route_repack+ktune_gemm_sm90_wgmma_f16_tn_128x128x64_w64x128_s5_a8 > $OUT/ncu-tiny.txt 2>&1
echo "ncu tiny rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^  [a-zA-Z_].*\(|Duration" $OUT/ncu-tiny.txt | cut -c1-140 | head -24
echo "total $(( $(date +%s) - T0 )) s"
