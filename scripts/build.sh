#!/usr/bin/env bash
# Configures (once) and builds Cohort into build/ (executables in build/bin/).
#   scripts/build.sh              everything (the tests' programs too)
#   scripts/build.sh TARGET...    only those targets and what they need
# BUILD_DIR and BUILD_JOBS override the defaults (build, 2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
BUILD_JOBS="${BUILD_JOBS:-2}"
GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
if [ $# -gt 0 ]; then
  cmake --build "$BUILD_DIR" -j "$BUILD_JOBS" --target "$@"
else
  cmake --build "$BUILD_DIR" -j "$BUILD_JOBS"
fi
