#!/usr/bin/env bash
# scripts/check-headers.sh — every public header compiles on its own, without warnings.
#
#   *.hpp  g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only, on a TU that includes the header twice
#          (self-contained, and #pragma once holds)
#   *.cuh  nvcc -std=c++20 --expt-relaxed-constexpr for sm_90a, -c, nvcc warnings as errors
#          (-Werror all-warnings) and -Xcompiler -Wall,-Wextra,-Werror, on the same kind of TU. Nothing
#          is instantiated, so this costs seconds per header, not the kernels' compile time.
#   */instances/all.cuh  umbrella headers that register every default family: including them
#          instantiates every kernel (minutes), so they are only preprocessed (nvcc -E: every include
#          resolves); src/instances/ compiles the same registrations, and their includes are checked above.
#
# Usage: scripts/check-headers.sh [--host-only | --cuda-only] [header ...]   (paths under include/)
# Environment: KTUNE_JOBS (parallel compiles, default nproc), CXX (default g++), NVCC (default nvcc).
# Exits non-zero when any header fails; prints each failure's compiler output and a timing summary.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${KTUNE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
cxx="${CXX:-g++}"
nvcc="${NVCC:-}"
if [ -z "$nvcc" ]; then
  if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc
  elif [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc
  fi
fi

do_host=1 do_cuda=1
headers=()
for a in "$@"; do
  case "$a" in
    --host-only) do_cuda=0 ;;
    --cuda-only) do_host=0 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) headers+=("${a#include/}") ;;
  esac
done
if [ "${#headers[@]}" -eq 0 ]; then
  mapfile -t headers < <(cd "$root/include" && find ktune \( -name '*.hpp' -o -name '*.cuh' \) | LC_ALL=C sort)
fi

# The CUDA runtime headers (cuda_runtime_api.h) for the host compiler.
cuda_inc=""
if [ -n "$nvcc" ]; then
  cuda_inc="$(cd "$(dirname "$(command -v "$nvcc")")/.." && pwd)/include"
fi
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [ -z "$cuda_inc" ] && [ -n "$d" ] && [ -f "$d/include/cuda_runtime_api.h" ] && cuda_inc="$d/include"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/ktune-headers.XXXXXX")"
trap '[ -n "${KTUNE_KEEP_HEADER_WORK:-}" ] || rm -rf "$work"' EXIT

# One header: writes $work/<n>.log (compiler output) and $work/<n>.res ("ok|fail|skip <secs> <how> <header>").
check_one() {
  local n="$1" h="$2" how cmd=() t0 t1 rc=0
  local tu="$work/$n.tu" log="$work/$n.log"
  case "$h" in
    */instances/all.cuh)
      [ "$do_cuda" = 1 ] || { echo "skip 0 - $h" >"$work/$n.res"; return 0; }
      how="nvcc -E (umbrella)"
      printf '#include "%s"\n' "$h" >"$tu.cu"
      cmd=("$nvcc" -std=c++20 -E -I"$root/include" "$tu.cu" -o /dev/null) ;;
    *.cuh)
      [ "$do_cuda" = 1 ] || { echo "skip 0 - $h" >"$work/$n.res"; return 0; }
      how="nvcc -c sm_90a"
      printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$tu.cu"
      cmd=("$nvcc" -std=c++20 --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a
           -Werror all-warnings -Xcudafe --display_error_number -Xcompiler -Wall,-Wextra,-Werror
           -I"$root/include" -c "$tu.cu" -o "$tu.o") ;;
    *)
      [ "$do_host" = 1 ] || { echo "skip 0 - $h" >"$work/$n.res"; return 0; }
      how="$cxx -fsyntax-only"
      printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$tu.cpp"
      cmd=("$cxx" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$root/include")
      [ -n "$cuda_inc" ] && cmd+=(-isystem "$cuda_inc")
      cmd+=("$tu.cpp") ;;
  esac
  t0=$(date +%s.%N)
  "${cmd[@]}" >"$log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  # Anything the compiler printed is a failure too (warnings that are not errors, remarks).
  if [ "$rc" -eq 0 ] && [ -s "$log" ]; then rc=1; fi
  printf '%s %.1f %s\t%s\n' "$([ "$rc" -eq 0 ] && echo ok || echo fail)" "$(echo "$t1 - $t0" | bc)" "$how" "$h" >"$work/$n.res"
}
export -f check_one
export root work cxx nvcc cuda_inc do_host do_cuda

if [ "$do_cuda" = 1 ] && [ -z "$nvcc" ]; then
  echo "check-headers: nvcc not found; set NVCC or use --host-only" >&2
  exit 1
fi

for h in "${headers[@]}"; do
  [ -f "$root/include/$h" ] || { echo "check-headers: no such header include/$h" >&2; exit 1; }
done
i=${#headers[@]}
t_start=$(date +%s)
for ((n = 0; n < i; n++)); do printf '%d\t%s\n' "$n" "${headers[$n]}"; done |
  xargs -P "$jobs" -L 1 bash -c 'check_one "$0" "$1"'
t_end=$(date +%s)

fails=0 checked=0
for ((n = 0; n < i; n++)); do
  read -r status secs rest <"$work/$n.res"
  [ "$status" = skip ] && continue
  checked=$((checked + 1))
  printf '  %-4s %6ss  %s\n' "$status" "$secs" "$rest"
  if [ "$status" != ok ]; then
    fails=$((fails + 1))
    sed 's/^/      | /' "$work/$n.log" | head -60
  fi
done
echo "check-headers: $checked headers, $fails failed, $((t_end - t_start)) s with $jobs jobs"
[ "$fails" -eq 0 ]
