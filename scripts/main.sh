#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs a 2-worker job through
# cohort-launch (an allreduce over shared memory, checked and timed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/build.sh
echo "main: 2 workers, 16 MiB allreduce over shared memory and over Gloo/TCP"
build/bin/cohort-launch --slots 2 -- build/bin/cohort-bench allreduce --bytes 16777216 --iters 20 --transport shm
build/bin/cohort-launch --slots 2 -- build/bin/cohort-bench allreduce --bytes 16777216 --iters 20 --transport gloo
