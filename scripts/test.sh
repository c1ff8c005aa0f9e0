#!/usr/bin/env bash
# scripts/test.sh — build ktune and run its tests: host tests always, GPU tests when a CUDA device is
# visible (otherwise ctest lists them as skipped). Extra arguments go to ctest, e.g. `-L host`.
set -euo pipefail
# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

ktune_install_deps
ktune_configure
ktune_build
ctest --test-dir "$KTUNE_BUILD_DIR" --output-on-failure "$@"
