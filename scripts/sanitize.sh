#!/usr/bin/env bash
# scripts/sanitize.sh — compute-sanitizer over every default GEMM and conv instance on a GPU.
#
#   scripts/sanitize.sh [--tools memcheck,racecheck,synccheck,initcheck] [--filter TEXT]... [--skip TEXT]...
#                       [--kind gemm|conv|all] [--timeout SECONDS per tool] [--out DIR] [--no-plain]
#
# Runs ktune_sanitize_driver (test/sanitize/sanitize_driver.cpp: each instance once, by name, on a
# small problem with partial edge tiles, more k-tiles than pipeline stages, padded leading dimensions
# and an epilogue reading C, bias and residual; checked against a float64 reference) first without a
# sanitizer (unless --no-plain), then once under each tool. Hopper instances run first. Prints a summary table (per tool:
# instances completed, errors, time; then every instance with a report) and writes the logs to the
# output folder (default $KTUNE_GPU_BUILD_DIR/sanitize/).
#
# Exit status: 0 when every tool finished with 0 errors and every instance passed; 1 on any sanitizer
# error, failed instance, timeout or missing compute-sanitizer; 2 on a usage error. Without a GPU it
# prints SKIPPED and exits 0.
# Environment: KTUNE_GPU_BUILD_DIR (default build-gpu; the driver is built there when missing, with
# `cmake --build`, configuring a Release tree first if there is none), KTUNE_JOBS, COMPUTE_SANITIZER.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KTUNE_GPU_BUILD_DIR:-$ROOT/build-gpu}"
JOBS="${KTUNE_JOBS:-$(nproc 2>/dev/null || echo 4)}"
tools="memcheck,racecheck,synccheck,initcheck"
timeout_s=300
out=""
driver_args=()
plain=1

usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) tools="${2:?--tools needs a value}"; shift ;;
    --filter|--skip|--kind) driver_args+=("$1" "${2:?$1 needs a value}"); shift ;;
    --timeout) timeout_s="${2:?--timeout needs a value}"; shift ;;
    --out) out="${2:?--out needs a value}"; shift ;;
    --no-plain) plain=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sanitize.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
out="${out:-$BUILD/sanitize}"
mkdir -p "$out"
rm -f "$out"/*.log "$out"/summary.txt

log() { printf '[sanitize] %s\n' "$*" >&2; }

# ---- a GPU? -----------------------------------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "scripts/sanitize.sh: no CUDA GPU visible - SKIPPED"
  exit 0
fi

# ---- compute-sanitizer --------------------------------------------------------------------------------
cs="${COMPUTE_SANITIZER:-}"
if [ -z "$cs" ]; then
  for c in compute-sanitizer "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer \
           "$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/nvcc)")/compute-sanitizer"; do
    if command -v "$c" >/dev/null 2>&1; then cs="$(command -v "$c")"; break; fi
  done
fi
if [ -z "$cs" ]; then
  echo "scripts/sanitize.sh: compute-sanitizer not found (part of the CUDA toolkit; set COMPUTE_SANITIZER)" >&2
  exit 1
fi
cs_help="$("$cs" --help 2>&1)"
has_opt() { grep -q -- "$1" <<<"$cs_help"; }

# ---- the driver ----------------------------------------------------------------------------------------
driver="$BUILD/ktune_sanitize_driver"
if [ ! -x "$driver" ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    log "configuring $BUILD"
    cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 ||
      { tail -n 30 "$out/build.log" >&2; exit 1; }
  fi
  log "building ktune_sanitize_driver in $BUILD"
  cmake --build "$BUILD" -j "$JOBS" --target ktune_sanitize_driver >>"$out/build.log" 2>&1 ||
    { tail -n 40 "$out/build.log" >&2; exit 1; }
fi

# ---- runs ----------------------------------------------------------------------------------------------
# count_reports LOG: sanitizer records (lines "========= <Something>" that start a report, not the
# banner, summaries or indented detail lines), per instance ("== BEGIN name" opens its section).
attribute() {
  awk '
    /^== BEGIN / { cur = $3; next }
    /^== END / { cur = ""; next }
    /^========= [^ ]/ {
      if ($0 ~ /COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application returned|^========= *$/) next
      n[cur == "" ? "(outside any instance)" : cur]++
    }
    END { for (k in n) printf "%6d  %s\n", n[k], k }' "$1" | sort -k2
}

summary=()
failed=0
declare -A tool_opts=(
  [memcheck]=""
  [racecheck]=""
  [synccheck]=""
  [initcheck]=""
)
# memcheck: an unallocated guard after every allocation, so a read just past one buffer cannot land in
# the next; racecheck: every hazard, shared-memory reads by cp.async included where supported.
has_opt '--padding' && tool_opts[memcheck]="--padding 512"
has_opt '--racecheck-report' && tool_opts[racecheck]="--racecheck-report all"

T0=$(date +%s)
selected=$("$driver" --list "${driver_args[@]}" 2>/dev/null | wc -l)
skips=0
if [ "$plain" = 1 ]; then
  log "plain run (no sanitizer)"
  start=$(date +%s)
  timeout "$timeout_s" "$driver" "${driver_args[@]}" >"$out/plain.log" 2>&1
  rc=$?
  [ "$rc" = 77 ] && { echo "scripts/sanitize.sh: the driver found no CUDA device - SKIPPED"; exit 0; }
  passed=$(grep -c '^== END .* PASS ' "$out/plain.log")
  fails=$(grep -c '^== END .* FAIL ' "$out/plain.log")
  skips=$(grep -c '^== SKIP ' "$out/plain.log")
  status=ok
  [ "$rc" -ne 0 ] && { status="FAILED(rc=$rc)"; failed=1; }
  summary+=("$(printf '%-10s %-16s %5s/%-5s %8s %8s %6ss' none "$status" "$passed" "$selected" - "$fails" $(($(date +%s) - start)))")
fi

IFS=, read -r -a tool_list <<<"$tools"
for t in "${tool_list[@]}"; do
  case "$t" in memcheck|racecheck|synccheck|initcheck) ;; *) echo "sanitize.sh: unknown tool $t" >&2; exit 2 ;; esac
  log "$t"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout -k 2 "$timeout_s" "$cs" --tool "$t" ${tool_opts[$t]} --print-limit 200 --error-exitcode 99 \
    "$driver" "${driver_args[@]}" >"$out/$t.log" 2>&1
  rc=$?
  done_n=$(grep -c '^== END ' "$out/$t.log")
  pass_n=$(grep -c '^== END .* PASS ' "$out/$t.log")
  errors=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$out/$t.log" | tail -n 1 | grep -o '[0-9]*')
  hazards=$(grep -o 'RACECHECK SUMMARY: [0-9]* hazard[^)]*)' "$out/$t.log" | tail -n 1)
  # racecheck counts its errors in its own summary: "N hazards displayed (E errors, W warnings)"
  [ -z "${errors:-}" ] && [ -n "$hazards" ] && errors=$(grep -o '([0-9]* error' <<<"$hazards" | grep -o '[0-9]*')
  case "$rc" in
    0) status=ok ;;
    99) status=ERRORS ;;
    124) status="TIMEOUT(${timeout_s}s)" ;;
    *) status="FAILED(rc=$rc)" ;;
  esac
  [ "$status" = ok ] && [ "$pass_n" -lt "$done_n" ] && status="FAILED(results)"
  [ "$status" != ok ] && failed=1
  [ -n "${errors:-}" ] && [ "$errors" != 0 ] && { failed=1; [ "$status" = ok ] && status=ERRORS; }
  summary+=("$(printf '%-10s %-16s %5s/%-5s %8s %8s %6ss  %s' "$t" "$status" "$done_n" "$selected" "${errors:-?}" \
               "$((done_n - pass_n))" $(($(date +%s) - start)) "${hazards#RACECHECK SUMMARY: }")")
  reports=$(attribute "$out/$t.log")
  if [ -n "$reports" ]; then
    while IFS= read -r l; do summary+=("           reports: $l"); done <<<"$reports"
  fi
done

{
  echo
  gpu=$(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
  echo "ktune compute-sanitizer check — ${gpu:-?}, $("$cs" --version 2>/dev/null | grep -o 'Version [^ ]*' | head -n 1), $(($(date +%s) - T0)) s"
  skips=$(cat "$out"/*.log 2>/dev/null | grep '^== SKIP ' | sort -u | wc -l)
  echo "instances: $selected selected ($skips skipped: not for this device); driver: $driver ${driver_args[*]}"
  printf '%-10s %-16s %11s %8s %8s %7s  %s\n' tool status done/all errors failed time racecheck
  printf '%s\n' "${summary[@]}"
  grep -h '^== END .* FAIL ' "$out"/*.log 2>/dev/null | sort -u | sed 's/^== END /FAILED: /' | head -n 40
  echo "logs: $out"
  [ "$failed" = 0 ] && echo "RESULT: ok" || echo "RESULT: FAILED"
} | tee "$out/summary.txt"
exit "$failed"
