#!/usr/bin/env bash
# scripts/gpu-batch.sh — one GPU-machine call that runs scripts/gpu-check.sh, then every request script
# gpu-requests/[a-z]*.sh (a git-ignored folder, carried to the machine) in name order, each with its own
# timeout ("# limit: N" in the script, else $REQ_LIMIT) inside a total $BUDGET, each writing under its own
# $OUT/<batch>/<name>/; everything is packed into $OUT/$BATCH.tgz (the device tool returns at most 8 files).
#   BATCH=name KCOMMIT=hash CHECK_LIMIT=s BUDGET=s REQ_LIMIT=s SKIP="check name..." scripts/gpu-batch.sh
# SKIP=check builds build-gpu/ without running gpu-check. Requests run from the repo root after the build.
# gpu-check took 322-341 s on the H200 in session 11 (ctest ~140 s of it), hence CHECK_LIMIT 400. The device
# tool copies the working tree (uncommitted edits included) and a .git of the session's start: to check a
# commit while others edit, extract it (`git archive <commit> | tar x -C build-src<X>`, an ignored folder,
# without bench/results to stay under the 64 MiB carry limit), carry that folder and run this script there.
set -u
T0=$(date +%s)
: "${BATCH:=batch}" "${KCOMMIT:=unknown}" "${CHECK_LIMIT:=400}" "${BUDGET:=540}" "${REQ_LIMIT:=60}" "${SKIP:=}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
: "${OUT:?set OUT, the folder whose files come back (the device tool sets it)}"
R="$OUT/$BATCH"; mkdir -p "$R"
pack() { tar czf "$OUT/$BATCH.tgz" -C "$OUT" "$BATCH"; }
trap pack EXIT
{ date -u; nvidia-smi; } >"$R/nvidia-smi.txt" 2>&1
export KTUNE_CMAKE_ARGS="-DKTUNE_GIT_COMMIT=$KCOMMIT"
if [[ " $SKIP " != *" check "* ]]; then
  OUT="$R/gpu-check" timeout "$CHECK_LIMIT" bash scripts/gpu-check.sh >"$R/gpu-check.log" 2>&1
  echo "gpu-check rc=$? at $(( $(date +%s) - T0 )) s" | tee -a "$R/times.txt"
else
  # requests still need the build
  timeout "$CHECK_LIMIT" bash -c 'cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release $KTUNE_CMAKE_ARGS && cmake --build build-gpu -j 16' >"$R/build.log" 2>&1
  echo "build rc=$? at $(( $(date +%s) - T0 )) s" | tee -a "$R/times.txt"
fi
for s in "${KTUNE_REQUESTS:-gpu-requests}"/[a-z]*.sh; do
  [ -f "$s" ] || continue
  name=$(basename "$s" .sh)
  [[ " $SKIP " == *" $name "* ]] && continue
  left=$(( BUDGET - ($(date +%s) - T0) ))
  lim=$(sed -n 's/^# limit: *\([0-9]*\).*/\1/p' "$s" | head -n1); lim=${lim:-$REQ_LIMIT}
  (( lim > left )) && lim=$left
  if (( lim < 10 )); then echo "$name not run (budget)" | tee -a "$R/times.txt"; continue; fi
  mkdir -p "$R/$name"
  start=$(date +%s)
  ( cd "$ROOT" && OUT="$R/$name" timeout "$lim" bash "$s" ) >"$R/$name.log" 2>&1
  echo "$name rc=$? $(( $(date +%s) - start )) s (limit $lim)" | tee -a "$R/times.txt"
done
echo "total $(( $(date +%s) - T0 )) s" | tee -a "$R/times.txt"
