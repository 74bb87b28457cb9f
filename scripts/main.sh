#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs a 2-worker job through
# cohort-launch: an allreduce over shared memory and over Gloo, then data-parallel training of
# the CNN on Fashion-MNIST (gradients averaged across the 2 workers every step).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/build.sh
echo "main: 2 workers, 16 MiB allreduce over shared memory and over Gloo/TCP"
build/bin/cohort-launch --slots 2 -- build/bin/cohort-bench allreduce --bytes 16777216 --iters 20 --transport shm
build/bin/cohort-launch --slots 2 -- build/bin/cohort-bench allreduce --bytes 16777216 --iters 20 --transport gloo
echo "main: 2 workers training the CNN on Fashion-MNIST (per-worker batch 64, 100 steps)"
build/bin/cohort-launch --slots 2 -- build/bin/cohort-bench train --model cnn --per-slot-batch 64 --steps 100 --warmup 5
