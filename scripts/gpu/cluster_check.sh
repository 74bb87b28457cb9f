#!/bin/bash
# The Fashion-MNIST example through a one-agent cluster on the GPU machine (issue 17): the
# cluster's programs from .gpu-cluster.tar.xz (scripts/gpu/bundle_cluster.sh, made on Debian),
# the trial from the training build there (device_check.sh --train). `cohort cluster up --gpus`
# starts a master and one agent that finds the GPU with nvidia-smi; the experiment (the example
# on one slot, experiment_seed 20261128) runs to the end and its validations are printed.
#
# Usage: scripts/gpu/cluster_check.sh [--cpu] [TRAIN_BUILD_DIR]   (default: build-device-train)
#   --cpu: the same experiment on one CPU slot, with the programs of TRAIN_BUILD_DIR itself (no
#   bundle): the CPU figures the GPU run is compared with (scripts/gpu/cluster_check.sh --cpu
#   build, on the Debian machine). The seed is the same, so the trial's seed is too.
#   COHORT_DATA_DIR: Fashion-MNIST (default /usr/share/datasets/fashion-mnist).
#   COHORT_EXPERIMENT_TIMEOUT: seconds the experiment may take (default 900); the cluster is
#   taken down after it either way.
#   Logs: $OUT/cluster_check (when OUT is set), else TRAIN_BUILD_DIR/cluster_check.
# Exit status: that of `cohort experiment create --follow` (0: the trial completed).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
slots=(--gpus)
if [ "${1:-}" = --cpu ]; then
  slots=(--slots 1)
  shift
fi
build=${1:-$root/build-device-train}
logs=${OUT:-$build}/cluster_check
mkdir -p "$logs"
work=$(mktemp -d /tmp/cohort-cluster.XXXXXX)
if [ "${slots[0]}" = --slots ]; then
  mkdir -p "$work/bin" "$work/lib"
  cp "$build"/bin/{cohort,cohort-master,cohort-agent,cohort-launch} "$work/bin/" || exit 1
elif ! tar -xJf "$root/.gpu-cluster.tar.xz" -C "$work"; then
  echo "cluster_check: no .gpu-cluster.tar.xz: run scripts/gpu/bundle_cluster.sh where it builds"
  exit 1
fi
deps=$root/.gpu-deps/usr
export LD_LIBRARY_PATH="$work/lib:$deps/lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config  # the cluster's files, the login
export COHORT_DATA_DIR=${COHORT_DATA_DIR:-/usr/share/datasets/fashion-mnist}
mkdir -p "$work/context"
cp "$build/bin/fashion_mnist_trial" "$work/context/"
# One slot, and a fixed seed (the trial's is derived from it) for the CPU and GPU runs alike.
{ sed 's/^  slots_per_trial: .*/  slots_per_trial: 1/' \
    "$root/examples/fashion_mnist/distributed.yaml"
  printf 'reproducibility:\n  experiment_seed: 20261128\n'; } >"$work/one_slot.yaml"
cli=$work/bin/cohort
echo "== cluster_check: cohort cluster up ${slots[*]}"
timeout 90 "$cli" cluster up "${slots[@]}" --port 18080 2>&1 | tee "$logs/up.log"
echo "== cluster_check: cohort experiment create --follow (the example on one slot)"
timeout "${COHORT_EXPERIMENT_TIMEOUT:-900}" "$cli" experiment create --follow \
  "$work/one_slot.yaml" "$work/context" >"$logs/experiment.log" 2>&1
rc=$?
tail -15 "$logs/experiment.log"
"$cli" trial logs 1 >"$logs/trial.log" 2>&1
grep -E "trial:|CUDA_VISIBLE|GPU|validation after" "$logs/trial.log" | tail -8
"$cli" cluster down
cp "$work"/data/cohort/logs/*.log "$logs/" 2>/dev/null
echo "== cluster_check: experiment exit $rc; logs in $logs"
exit $rc
