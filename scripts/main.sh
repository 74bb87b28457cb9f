#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the experiment
# examples/fashion_mnist/distributed.yaml on this machine with
# `cohort experiment create --local`: one trial on 2 slots, each worker started by cohort-launch
# (synchronous data parallelism: each worker trains on 64 of every 128 records, gradients are
# averaged across the 2 workers every step). About 4 minutes on 2 cores; a live progress line,
# validation every 500 batches and a summary at the end; output under cohort-runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/build.sh
echo "main: cohort experiment create --local examples/fashion_mnist/distributed.yaml build/bin"
build/bin/cohort experiment create --local examples/fashion_mnist/distributed.yaml build/bin "$@"
