# limit: 240
# The warp-stall breakdown b-stalls.sh did not print (its full set has no pc-sampling metric here): per stall
# reason, warps stalled per issued instruction (smsp__average_warps_issue_stalled_*_per_issue_active), for the
# ping-pong 256x64 tile (default build, and the stmatrix box store when build-stm-on/ exists from
# stmatrix-box/a.sh) beside cuDNN's 256x64x32 fprop kernel, on 56² 3×3 64→64 at N = 256.
set -u
T0=$(date +%s)
B=build-gpu; [ -x $B/ktune-conv-bench ] || B=build-ncu
if [ ! -x $B/ktune-conv-bench ]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF \
    -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF > $OUT/cfg.log 2>&1
  cmake --build $B --target ktune-conv-bench -j 16 > $OUT/build.log 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"
fi
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
run() {  # name, binary dir, kernel regex, conv-bench --only text
  timeout 60 ncu --clock-control none --section SpeedOfLight --metrics "$M" -k "regex:$3" -c 1 $2/ktune-conv-bench --n 256 --layer 2 \
    --all --only "$4" > $OUT/$1.txt 2>&1
  echo "== $1 rc=$? $(( $(date +%s) - T0 )) s"
  grep -E "Duration|stalled" $OUT/$1.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -g -r | head -14
}
run stalls-pp256x64 $B 'conv_im2col_kernel' 'tma_im2col_pp_256x64x64_w256x64_s5_a8'
[ -x build-stm-on/ktune-conv-bench ] && run stalls-pp256x64-stm build-stm-on 'conv_im2col_kernel' 'tma_im2col_pp_256x64x64_w256x64_s5_a8'
run stalls-cudnn $B 'xmma|cudnn|implicit' 'nomatch'
echo "total $(( $(date +%s) - T0 )) s"
