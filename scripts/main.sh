#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts a local cluster (a cohort-master with
# its SQLite database under ~/.local/share/cohort, and one cohort-agent with 2 slots) and trains
# examples/fashion_mnist/distributed.yaml on it, following the trial's progress until it ends:
# one trial on 2 slots (synchronous data parallelism: each worker trains on 64 of every 128
# records, gradients averaged every step). About 3 minutes of training on the 2-core development
# VM (12 batches/s), 6 on a VM half as fast (README's table). The cluster
# stays up afterwards for `build/bin/cohort experiment list`, `trial logs 1`, ...;
# `build/bin/cohort cluster down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
# Only what the main job runs: the CLI, the master, the agent, the launcher and the example
# (with its context directory); scripts/test.sh builds the rest.
scripts/build.sh cohort cohort-master cohort-agent cohort-launch fashion_mnist_trial
build/bin/cohort cluster up --agents 1 --slots 2
echo "main: cohort experiment create --follow examples/fashion_mnist/distributed.yaml build/contexts/fashion_mnist"
build/bin/cohort experiment create --follow examples/fashion_mnist/distributed.yaml build/contexts/fashion_mnist "$@"
