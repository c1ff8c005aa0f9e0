#!/usr/bin/env bash
# scripts/profile.sh — build ktune-profile and run it; every argument is passed through.
#   scripts/profile.sh           profile the built-in default problems (needs a CUDA device)
#   scripts/profile.sh --list    list families, instances and the constraint model's pruning reasons
# Build output goes to stderr, so the profile's own output on stdout can be piped.
set -euo pipefail
# shellcheck source=scripts/_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

if ! compgen -G "$KTUNE_ROOT/tools/ktune-profile/*.cu" >/dev/null; then
  ktune_log "tools/ktune-profile/ has no sources: there is no ktune-profile to build"
  exit 1
fi
ktune_install_deps
ktune_configure
ktune_build ktune-profile
exec "$KTUNE_BUILD_DIR/ktune-profile" "$@"
