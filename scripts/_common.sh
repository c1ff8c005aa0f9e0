# scripts/_common.sh — shared setup for scripts/test.sh and scripts/profile.sh (sourced, not run).
#
#   ktune_install_deps            on Debian/Ubuntu as root: apt-get install what is missing of
#                                 doctest-dev, libbenchmark-dev, ccache, ninja-build
#   ktune_configure [cmake args]  configure $KTUNE_BUILD_DIR (default build/), Ninja when available
#   ktune_build [targets]         build with $KTUNE_JOBS jobs (default: nproc)
#
# Environment: KTUNE_BUILD_DIR, KTUNE_JOBS, KTUNE_CMAKE_ARGS (extra configure arguments, split on
# spaces), CMAKE_CUDA_ARCHITECTURES / CUDAARCHS (otherwise: the visible GPU, or sm_90a + sm_80).

KTUNE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KTUNE_BUILD_DIR="${KTUNE_BUILD_DIR:-$KTUNE_ROOT/build}"
KTUNE_JOBS="${KTUNE_JOBS:-$(nproc 2>/dev/null || echo 2)}"
# ccache keys on the compiler command line, which holds absolute paths: relative to the checkout,
# another clone of the same commit (CI's) reuses what this one compiled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$KTUNE_ROOT}"

ktune_log() { printf '[ktune] %s\n' "$*" >&2; }

ktune_install_deps() {
  command -v dpkg-query >/dev/null 2>&1 || return 0
  local missing=() pkg
  for pkg in doctest-dev libbenchmark-dev ccache ninja-build; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    ktune_log "missing packages (${missing[*]}); not root, so not installing them: what needs them is skipped"
    return 0
  fi
  ktune_log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2; then
    ktune_log "apt-get failed; carrying on with what is installed"
  fi
}

ktune_configure() {
  local args=(-S "$KTUNE_ROOT" -B "$KTUNE_BUILD_DIR")
  # The generator of an existing build tree cannot change; pick one only for a new tree.
  if [ ! -f "$KTUNE_BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
    args+=(-G Ninja)
  fi
  if [ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ]; then
    args+=("-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES")
  fi
  # shellcheck disable=SC2206
  local extra=(${KTUNE_CMAKE_ARGS:-})
  ktune_log "configuring $KTUNE_BUILD_DIR"
  cmake "${args[@]}" "${extra[@]}" "$@" >&2
}

ktune_build() {
  local targets=() t
  for t in "$@"; do targets+=(--target "$t"); done
  ktune_log "building${*:+ $*} with $KTUNE_JOBS jobs"
  cmake --build "$KTUNE_BUILD_DIR" -j "$KTUNE_JOBS" "${targets[@]}" >&2
}
