#!/usr/bin/env bash
# scripts/fuzz.sh — build the libFuzzer targets of test/fuzz/ with clang and run each for a bounded time.
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]     targets: cache gemm_args (default: all)
#
# Each target is built with clang++ -fsanitize=fuzzer,address,undefined (any sanitizer report or
# invariant failure is a crash) into $KTUNE_FUZZ_DIR (default build-fuzz/), then run with
#   -max_total_time=<seconds> -rss_limit_mb=2048 -timeout=10
# starting from the committed corpus test/fuzz/corpus/<target>/ (read only: new inputs go to
# $KTUNE_FUZZ_DIR/corpus/<target>/, crash inputs to $KTUNE_FUZZ_DIR/artifacts/). Exits non-zero when a
# target crashes, printing the reproducer; replay one with
#   build-fuzz/fuzz_<target> <crash file>         (or the g++ build: build/ktune_fuzz_<target>_replay <file>)
#
# Other modes:
#   scripts/fuzz.sh --build-only                  only build
#   scripts/fuzz.sh --replay                      run each target once over its committed corpus
#   scripts/fuzz.sh --merge <target>              minimise $KTUNE_FUZZ_DIR/corpus/<target> plus the committed
#                                                 corpus into test/fuzz/corpus/<target>/ (libFuzzer -merge=1)
# Reproducible: every run uses a seed (-seed=), printed with the command that repeats it. KTUNE_FUZZ_SEED=N
# (or --seed N) sets it; by default it is derived from the commit (same commit, same seed: a CI run can
# be repeated), plus a number derived from each target's name. New coverage is kept in $KTUNE_FUZZ_DIR/corpus/<target>/
# across runs (fold it into the committed corpus with --merge); a crash input is kept in artifacts/.
# Environment: CLANGXX (default clang++-14, else clang++), KTUNE_FUZZ_DIR, KTUNE_FUZZ_JOBS (build jobs),
# KTUNE_FUZZ_SEED.
# When clang's libFuzzer runtime is missing, the script says so, builds the targets with the replay
# driver (test/fuzz/replay_main.cpp) and ASan+UBSan instead, and replays the corpus deterministically.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${KTUNE_FUZZ_DIR:-$root/build-fuzz}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

mode=run seconds=60 targets=() seed="${KTUNE_FUZZ_SEED:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) mode=build ;;
    --seed) seed="${2:?--seed needs a number}"; shift ;;
    --replay) mode=replay ;;
    --merge) mode=merge ;;
    -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}"; exit 0 ;;
    [0-9]*) seconds="$1" ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if [ "${#targets[@]}" -eq 0 ]; then
  for f in "$root"/test/fuzz/fuzz_*.cpp; do
    n="$(basename "$f" .cpp)"
    targets+=("${n#fuzz_}")
  done
fi

log() { printf '[fuzz] %s\n' "$*" >&2; }

# The run's seed: given, or derived from the commit (28 bits of its hash), or from the clock outside git.
seed_source="KTUNE_FUZZ_SEED"
if [ -z "$seed" ]; then
  if commit="$(git -C "$root" rev-parse HEAD 2>/dev/null)"; then
    seed=$((16#${commit:0:7})) seed_source="commit ${commit:0:12}"
  else
    seed=$(( $(date +%s) % 268435456 )) seed_source="clock"
  fi
fi
case "$seed" in ''|*[!0-9]*) log "the seed must be a non-negative integer, got '$seed'"; exit 2 ;; esac

cxx="${CLANGXX:-}"
if [ -z "$cxx" ]; then
  for c in clang++-14 clang++; do command -v "$c" >/dev/null 2>&1 && { cxx="$c"; break; }; done
fi

# CUDA runtime headers (the tuner headers include cuda_runtime_api.h; nothing calls into the runtime)
cuda_root=""
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [ -n "$d" ] && [ -f "$d/include/cuda_runtime_api.h" ] && { cuda_root="$d"; break; }
done
if [ -z "$cuda_root" ] && command -v nvcc >/dev/null 2>&1; then
  cuda_root="$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)"
fi
[ -n "$cuda_root" ] || { log "CUDA toolkit headers not found (set CUDA_HOME)"; exit 1; }

launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(ccache)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"  # another clone of the same commit hits the cache

common=(-std=c++20 -g -O1 -fno-omit-frame-pointer -Wall -Wextra
        -I"$root/include" -I"$root/test/fuzz" -isystem "$cuda_root/include")
libs=(-L"$cuda_root/lib64" -lcudart -Wl,-rpath,"$cuda_root/lib64")

# Is libFuzzer usable? (Debian: clang++-14 is in clang-14, libclang_rt.fuzzer in libclang-rt-14-dev.)
have_libfuzzer=0
probe_libfuzzer() {
  [ -n "$cxx" ] || return 1
  local probe="$out/.probe"
  printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$probe.cpp"
  local rc=0
  "$cxx" -fsanitize=fuzzer,address,undefined "$probe.cpp" -o "$probe" >/dev/null 2>&1 || rc=1
  rm -f "$probe" "$probe.cpp"
  return "$rc"
}
if probe_libfuzzer; then
  have_libfuzzer=1
elif [ -z "${CLANGXX:-}" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  log "installing clang-14 and libclang-rt-14-dev (libFuzzer)"
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >&2 ||
     { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev; } >&2; then
    command -v clang++-14 >/dev/null 2>&1 && cxx=clang++-14
    probe_libfuzzer && have_libfuzzer=1
  fi
fi

build() {  # build <target> -> $out/fuzz_<target> (compile through ccache when present, then link)
  local t="$1" src="$root/test/fuzz/fuzz_$1.cpp" bin="$out/fuzz_$1"
  [ -f "$src" ] || { log "no such target: $t ($src)"; return 1; }
  local t0=$SECONDS
  if [ "$have_libfuzzer" = 1 ]; then
    local flags=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
    "${launcher[@]}" "$cxx" "${common[@]}" "${flags[@]}" -c "$src" -o "$bin.o"
    "$cxx" "${flags[@]}" "$bin.o" -o "$bin" "${libs[@]}"
  else
    local gxx="${CXX:-g++}"
    local flags=(-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all)
    "${launcher[@]}" "$gxx" "${common[@]}" "${flags[@]}" -D_GLIBCXX_ASSERTIONS -c "$src" -o "$bin.o"
    "${launcher[@]}" "$gxx" "${common[@]}" "${flags[@]}" -c "$root/test/fuzz/replay_main.cpp" -o "$bin.replay_main.o"
    "$gxx" "${flags[@]}" "$bin.o" "$bin.replay_main.o" -o "$bin" "${libs[@]}"
  fi
  log "built fuzz_$t in $((SECONDS - t0)) s"
}

if [ "$have_libfuzzer" = 1 ]; then
  log "libFuzzer: $cxx"
else
  log "clang's libFuzzer runtime is not available (${cxx:-no clang++}; Debian: apt-get install clang-14 libclang-rt-14-dev):"
  log "building the targets with the replay driver instead: the committed corpus is replayed, nothing is fuzzed"
  [ "$mode" = run ] && mode=replay
  [ "$mode" = merge ] && { log "--merge needs libFuzzer"; exit 1; }
fi

jobs="${KTUNE_FUZZ_JOBS:-1}"
pids=()
for t in "${targets[@]}"; do
  build "$t" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
[ "$mode" = build ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:protect_shadow_gap=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

failed=()
for t in "${targets[@]}"; do
  # Each target its own seed, the same whichever targets run with it.
  target_seed=$(( (seed + $(printf '%s' "$t" | cksum | cut -d' ' -f1) % 65536) % 2147483647 + 1 ))  # 0: libFuzzer picks one
  bin="$out/fuzz_$t" seeds="$root/test/fuzz/corpus/$t"
  mkdir -p "$seeds"
  case "$mode" in
    replay)
      log "replaying $t over $(find "$seeds" -type f | wc -l) committed inputs"
      if [ "$have_libfuzzer" = 1 ]; then
        "$bin" -runs=0 "$seeds" >"$out/$t.log" 2>&1 || failed+=("$t")
      else
        "$bin" "$seeds" >"$out/$t.log" 2>&1 || failed+=("$t")
      fi
      tail -n 3 "$out/$t.log" >&2 ;;
    merge)
      mkdir -p "$out/corpus/$t"
      tmp="$(mktemp -d)"
      "$bin" -merge=1 "$tmp" "$seeds" "$out/corpus/$t" >"$out/$t.merge.log" 2>&1
      rm -f "$seeds"/*
      cp "$tmp"/* "$seeds"/
      rm -rf "$tmp"
      log "$t: $(find "$seeds" -type f | wc -l) inputs in test/fuzz/corpus/$t" ;;
    run)
      mkdir -p "$out/corpus/$t" "$out/artifacts"
      kept=$(find "$out/corpus/$t" -type f | wc -l)
      log "fuzzing $t for ${seconds} s, seed $target_seed (from $seed_source), corpus: $(find "$seeds" -type f | wc -l) committed + $kept kept inputs"
      log "  repeat: KTUNE_FUZZ_SEED=$seed scripts/fuzz.sh $seconds $t   (same corpus: $out/corpus/$t as it is now)"
      rc=0
      "$bin" -seed="$target_seed" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/${t}-" "$out/corpus/$t" "$seeds" >"$out/$t.log" 2>&1 || rc=$?
      grep -E '^(INFO: Seed:|stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE)' "$out/$t.log" | sed "s/^/[fuzz] $t: /" >&2 || true
      log "$t: $(find "$out/corpus/$t" -type f | wc -l) inputs kept in $out/corpus/$t (scripts/fuzz.sh --merge $t folds them into the committed corpus)"
      if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        log "$t FAILED (exit $rc):"
        grep -E -A40 'ERROR|runtime error|invariant violated|SUMMARY' "$out/$t.log" | head -60 >&2 || tail -n 40 "$out/$t.log" >&2
        for a in "$out/artifacts/${t}-"*; do
          [ -f "$a" ] && log "reproducer: $a (base64: $(base64 -w0 <"$a" | head -c 400))"
        done
      fi ;;
  esac
done

if [ "${#failed[@]}" -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "ok: ${targets[*]}"
