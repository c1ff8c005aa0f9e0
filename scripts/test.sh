#!/usr/bin/env bash
# scripts/test.sh — build ktune and run its tests: host tests always, GPU tests when a CUDA device is
# visible (otherwise ctest lists them as skipped). Extra arguments go to ctest, e.g. `-L host`.
set -euo pipefail
# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

ktune_install_deps
ktune_configure
# The test executables and what they link (the default instances); tools and benchmarks are not tests
# (scripts/profile.sh and .ci/run build them).
ktune_build ktune_tests
ctest --test-dir "$KTUNE_BUILD_DIR" --output-on-failure "$@"

# scripts/plot_results.py (benchmark results -> charts + Markdown table): host-side Python tests, a few
# seconds. The chart tests need matplotlib and are skipped (with a message) without it; without python3
# (>= 3.8) the whole suite is skipped.
if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
  if ! python3 -c 'import matplotlib' 2>/dev/null; then
    ktune_log "matplotlib not installed: the chart tests of scripts/plot_results.py are SKIPPED (pip install matplotlib); parsing and table tests run"
  fi
  ktune_log "python3 -m unittest discover -s test/scripts (scripts/plot_results.py)"
  python3 -m unittest discover -s "$KTUNE_ROOT/test/scripts"
else
  ktune_log "python3 >= 3.8 not found: the tests of scripts/plot_results.py are SKIPPED"
fi
