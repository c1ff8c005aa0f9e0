# Sourced by the A/B request scripts: unpack each tree $TARDIR/<variant>.tar (made here with
# `git archive <rev> -o gpu-requests/<dir>/<variant>.tar -- . ':!bench/results'`: the device's copy of .git holds
# main's objects only) and build $TARGETS of every variant in parallel into build-ab-<variant>. Sets T0.
# In: VARIANTS, TARDIR, TARGETS, JOBS (per variant), OUT.
T0=$(date +%s)
for v in $VARIANTS; do
  rm -rf build-ab-src/$v && mkdir -p build-ab-src/$v && tar xf $TARDIR/$v.tar -C build-ab-src/$v || { echo "no tarball for $v"; exit 1; }
  (cmake -S build-ab-src/$v -B build-ab-$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DKTUNE_BUILD_TESTS=OFF \
     -DKTUNE_BUILD_BENCH=OFF -DKTUNE_BUILD_EXAMPLES=OFF -DKTUNE_GIT_COMMIT=ab-$v > build-ab-$v.cfg.log 2>&1 &&
   cmake --build build-ab-$v --target $TARGETS -j "${JOBS:-8}" > build-ab-$v.log 2>&1; echo "$v build rc=$? $(( $(date +%s) - T0 )) s") &
done
wait

# Runs "$@" <round> <variant> for ROUNDS rounds, the variants in turn within each (alternation spreads clock
# and thermal drift over both trees).
ab_each_round() {
  local r v
  for r in $(seq 1 "$ROUNDS"); do for v in $VARIANTS; do "$@" "$r" "$v"; done; done
}
