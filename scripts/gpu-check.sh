#!/usr/bin/env bash
# scripts/gpu-check.sh — the whole check on a machine with a CUDA GPU:
#   1. configure build-gpu/ for the visible GPU's architecture (cc 9.0 → sm_90a) and build everything
#   2. run every test with ctest (host and GPU)
#   3. run ktune-profile on its built-in default problems
#   4. run each benchmark briefly, if any were built
#   5. report the compiler's resource usage of every instance (cuobjdump --dump-resource-usage)
#   6. install to build-gpu/prefix, build examples/consumer against it with find_package, run it
#   7. Markdown tables and PNG charts of 3 and 4 (scripts/plot_results.py; tables only without matplotlib)
# then print a summary table. Every step runs even when an earlier one failed; the exit code is
# non-zero when any step failed.
#
# Logs go to $OUT when it is set (1-build.log 2-ctest.log 3-profile.log 3-profile.csv 4-bench.log,
# 4-<bench>.json per benchmark binary, 5-resource-usage.txt 6-consumer.log summary.txt), else to
# build-gpu/gpu-check/. Written for a machine with cmake, ninja, nvcc, doctest and Google Benchmark
# but no ccache and no network: it installs nothing.
# Environment: KTUNE_GPU_BUILD_DIR (default build-gpu), KTUNE_JOBS (default nproc), KTUNE_CMAKE_ARGS,
# KTUNE_PROFILE_ARGS (ktune-profile's arguments; default none: the built-in default problems).
# A copy of the tree without .git stamps reports with commit "unknown": pass the commit along, e.g.
#   KTUNE_CMAKE_ARGS=-DKTUNE_GIT_COMMIT=$(git rev-parse --short=12 HEAD) scripts/gpu-check.sh
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KTUNE_GPU_BUILD_DIR:-$ROOT/build-gpu}"
LOGS="${OUT:-$BUILD/gpu-check}"
JOBS="${KTUNE_JOBS:-$(nproc 2>/dev/null || echo 4)}"
mkdir -p "$LOGS" "$BUILD"

SUMMARY=()
FAILED=0
T0=$(date +%s)

# run_step NAME LOGFILE TIMEOUT_S COMMAND... — run, log, time and record one step.
run_step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local start rc status
  start=$(date +%s)
  echo "==> $name" >&2
  {
    echo "\$ $*"
    timeout "$limit" "$@"
  } >>"$LOGS/$log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    77) status=skipped ;;
    124) status="TIMEOUT(${limit}s)"; FAILED=1 ;;
    *) status="FAILED(rc=$rc)"; FAILED=1 ;;
  esac
  SUMMARY+=("$(printf '%-26s %-16s %6ss   %s' "$name" "$status" "$(($(date +%s) - start))" "$log")")
  return $rc
}

note() { SUMMARY+=("$(printf '  %s' "$*")"); }

# ---- 1. configure + build -------------------------------------------------------------------------
: >"$LOGS/1-build.log"
{
  echo "# $(date -u +%FT%TZ) on $(hostname), $JOBS jobs"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>&1 || echo "nvidia-smi failed"
  nvcc --version 2>&1 | tail -n 2
  cmake --version | head -n 1
} >>"$LOGS/1-build.log"

gen=()
if [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
# shellcheck disable=SC2206
extra=(${KTUNE_CMAKE_ARGS:-})
# The build keeps going past a failing target (-k), so the tests and tools that did build still run.
configured=0
run_step "configure" 1-build.log 300 cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" &&
  configured=1
if [ "$configured" = 1 ]; then
  keep_going=(-k)
  grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt" && keep_going=(-k 0)
  run_step "build (-j$JOBS)" 1-build.log 420 cmake --build "$BUILD" -j "$JOBS" -- "${keep_going[@]}"
  while IFS= read -r l; do note "$l"; done < <(grep -E '^FAILED: ' "$LOGS/1-build.log" | sed 's/^FAILED: \(\[code=[0-9]*\] \)\?/build failed: /')
fi
archs=$(grep -m1 '^CMAKE_CUDA_ARCHITECTURES:' "$BUILD/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
note "CUDA architectures: ${archs:-?}"
# The nvcc command lines: Hopper must be built as arch=compute_90a,code=sm_90a, never plain sm_90.
if command -v ninja >/dev/null 2>&1 && [ -f "$BUILD/build.ninja" ]; then
  gencodes=$(ninja -C "$BUILD" -t commands 2>/dev/null | grep -o -- '--generate-code=[^ "]*' | sort -u | tr '\n' ' ')
  note "nvcc targets: ${gencodes:-none found}"
  echo "nvcc targets: $gencodes" >>"$LOGS/1-build.log"
fi

# ---- 2. tests ---------------------------------------------------------------------------------------
if [ "$configured" = 1 ]; then
  run_step "ctest" 2-ctest.log 300 ctest --test-dir "$BUILD" --output-on-failure --timeout 240
  line=$(grep -E 'tests passed|tests failed' "$LOGS/2-ctest.log" | tail -n 1)
  note "ctest: ${line:-no summary line}"
  while IFS= read -r l; do note "$l"; done < <(grep -E '^[[:space:]]*[0-9]+/[0-9]+ Test' "$LOGS/2-ctest.log" | sed 's/^ *//')
else
  SUMMARY+=("$(printf '%-26s %-16s' ctest 'not run (configure failed)')")
fi

# ---- 3. ktune-profile -------------------------------------------------------------------------------
if [ -x "$BUILD/ktune-profile" ]; then
  # shellcheck disable=SC2206
  profile_args=(${KTUNE_PROFILE_ARGS:-})
  run_step "ktune-profile ${profile_args[*]:-(defaults)}" 3-profile.log 300 "$BUILD/ktune-profile" "${profile_args[@]}" --csv "$LOGS/3-profile.csv"
else
  SUMMARY+=("$(printf '%-26s %-16s' ktune-profile 'not built')")
fi

# ---- 4. benchmarks ----------------------------------------------------------------------------------
benches=()
for b in "$BUILD"/ktune_bench_*; do [ -x "$b" ] && [ -f "$b" ] && benches+=("$b"); done
if [ "${#benches[@]}" -gt 0 ]; then
  for b in "${benches[@]}"; do
    # Google Benchmark JSON (context: GPU name, fingerprint, commit) beside the text log, for bench/results/
    run_step "bench $(basename "$b")" 4-bench.log 120 "$b" --benchmark_min_time=0.05s \
      --benchmark_out="$LOGS/4-$(basename "$b").json" --benchmark_out_format=json
  done
else
  SUMMARY+=("$(printf '%-26s %-16s' benchmarks 'none built')")
fi

# ---- 5. resource usage of the instances (both object libraries: Hopper-only TUs are apart in mixed-arch builds)
objs=()
while IFS= read -r -d '' o; do objs+=("$o"); done < <(find "$BUILD" \( -path '*ktune_instances.dir*' -o -path '*ktune_instances_sm90.dir*' \) -name '*.o' -print0 2>/dev/null | sort -z)
if [ "${#objs[@]}" -gt 0 ] && command -v cuobjdump >/dev/null 2>&1; then
  res="$LOGS/5-resource-usage.txt"
  {
    echo "# cuobjdump --dump-resource-usage of ${#objs[@]} instance objects; one row per kernel and arch"
    printf '%-8s %5s %6s %7s %6s  %s\n' arch REG STACK SHARED LOCAL kernel
    for o in "${objs[@]}"; do
      cuobjdump --dump-resource-usage "$o" 2>&1 | awk '
        /arch = / { arch = $3 }
        /Function / { fn = $2; sub(/:$/, "", fn) }
        /REG:/ {
          reg = stack = shared = local = "?"
          for (i = 1; i <= NF; ++i) {
            split($i, kv, ":")
            if (kv[1] == "REG") reg = kv[2]
            else if (kv[1] == "STACK") stack = kv[2]
            else if (kv[1] == "SHARED") shared = kv[2]
            else if (kv[1] == "LOCAL") local = kv[2]
          }
          printf "%-8s %5s %6s %7s %6s  %s\n", arch, reg, stack, shared, local, fn
        }'
    done | { command -v c++filt >/dev/null 2>&1 && c++filt || cat; }
  } >"$res" 2>&1
  kernels=$(awk 'NR > 2 && NF >= 6' "$res" | wc -l)
  maxreg=$(awk 'NR > 2 && NF >= 6 { if ($2 + 0 > m) m = $2 + 0 } END { print m + 0 }' "$res")
  spills=$(awk 'NR > 2 && NF >= 6 && ($3 + 0 > 0 || $5 + 0 > 0)' "$res" | wc -l)
  SUMMARY+=("$(printf '%-26s %-16s %6s    %s' "resource usage" ok "" 5-resource-usage.txt)")
  note "$kernels kernels (per arch), max $maxreg registers, $spills with stack/local memory (spills)"
else
  SUMMARY+=("$(printf '%-26s %-16s' "resource usage" 'no objects or no cuobjdump')")
fi

# ---- 6. examples/consumer against an installed prefix, run on the GPU ----------------------------------
if [ "$configured" = 1 ] && [ -f "$ROOT/examples/consumer/CMakeLists.txt" ]; then
  prefix="$BUILD/prefix"
  rm -rf "$prefix" "$BUILD/consumer"
  cgen=()
  command -v ninja >/dev/null 2>&1 && cgen=(-G Ninja)
  run_step "install" 6-consumer.log 120 cmake --install "$BUILD" --prefix "$prefix" &&
    run_step "consumer: configure" 6-consumer.log 120 cmake -S "$ROOT/examples/consumer" -B "$BUILD/consumer" \
      "${cgen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" &&
    run_step "consumer: build" 6-consumer.log 240 cmake --build "$BUILD/consumer" -j "$JOBS" &&
    run_step "consumer: run" 6-consumer.log 60 "$BUILD/consumer/ktune_consumer"
  line=$(grep -E ' max \|error\|' "$LOGS/6-consumer.log" | tail -n 1)
  [ -n "$line" ] && note "$line"
fi

# ---- 7. tables and charts of this run (scripts/plot_results.py) ---------------------------------------
if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
  plots=()
  [ -s "$LOGS/3-profile.csv" ] && plots+=("$LOGS/3-profile.csv")
  for j in "$LOGS"/4-*.json; do [ -s "$j" ] && plots+=("$j"); done
  if [ "${#plots[@]}" -gt 0 ]; then
    png=()
    python3 -c 'import matplotlib' 2>/dev/null || png=(--no-png)  # tables only without matplotlib
    commit=$(sed -n 's/^KTUNE_GIT_COMMIT:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
    [ -n "$commit" ] || commit=$(git -C "$ROOT" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
    run_step "tables and charts" 7-charts.log 300 python3 "$ROOT/scripts/plot_results.py" "${png[@]}" \
      --charts summary,heatmap --gpu "${gpu_name:-unknown GPU}" --commit "$commit" \
      --date "$(date -u '+%Y-%m-%d %H:%M UTC')" -o "$LOGS/charts" "${plots[@]}"
    note "Markdown tables and PNG charts of this run: $LOGS/charts/"
  fi
else
  SUMMARY+=("$(printf '%-26s %-16s' "tables and charts" 'no python3 >= 3.8')")
fi

# ---- summary ----------------------------------------------------------------------------------------
{
  echo
  gpu=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
  echo "ktune GPU check — ${gpu:-no GPU visible}, $(($(date +%s) - T0)) s in all"
  printf '%-26s %-16s %7s   %s\n' step status time log
  printf '%s\n' "${SUMMARY[@]}"
  echo "logs: $LOGS"
  [ "$FAILED" = 0 ] && echo "RESULT: ok" || echo "RESULT: FAILED"
} | tee "$LOGS/summary.txt"
exit "$FAILED"
