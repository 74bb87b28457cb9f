#!/usr/bin/env bash
# Runs Cohort's tests; installs and builds whatever is missing first.
#   scripts/test.sh           every test (unit + multiprocess)
#   scripts/test.sh --unit    the fast unit subset (a few minutes with a warm build)
set -euo pipefail
cd "$(dirname "$0")/.."
LABEL=""
if [ "${1:-}" = "--unit" ]; then
  LABEL="unit"
fi
scripts/install.sh --test
scripts/build.sh
cd "${BUILD_DIR:-build}"
args=(--output-on-failure --timeout 600)
if [ -n "$LABEL" ]; then
  args+=(-L "$LABEL")
fi
# Tests spawn several worker processes each; running two tests at once on 2 cores would make
# the timing-based failure tests (dead peer detected within 10 s) flaky.
ctest "${args[@]}"
