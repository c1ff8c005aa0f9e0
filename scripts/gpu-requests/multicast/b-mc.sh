# limit: 90
# multicast clusters of 4 and 8 on the tma_im2col route (@mc4, @mc8) against pairs and the other tactics,
# N = 32: L9 14² 256->256 3x3 (36 k-tiles), L12 7² 512->512 3x3 (72), L13 7² 2048->512 1x1 (32); N = 256: L12.
set -u
timeout 60 build-gpu/ktune-conv-bench --n 32 --layer 9,12,13 --all --tactics --multicast --budget 50 --csv $OUT/n32.csv > $OUT/n32.log 2>&1; echo "n32 rc=$?"
grep -E "^L[0-9]|tuned |GEOMEAN" $OUT/n32.log | cut -c1-230 | head -20
grep -E "@mc" $OUT/n32.log | sort -n | head -30
timeout 25 build-gpu/ktune-conv-bench --n 256 --layer 12 --all --multicast --budget 20 > $OUT/n256.log 2>&1; echo "n256 rc=$?"
grep -E "^L[0-9]|@mc|tuned " $OUT/n256.log | cut -c1-200 | head -20
