#!/bin/bash
# The GPU session's one-shot check (docs/design/0013-gpus.md): configure the comm-only GPU build
# (COHORT_CUDA=ON, COHORT_COMM_ONLY=ON: no LibTorch needed), build only what the NCCL conformance
# test and the GPU-slot launcher test need, run them, and print a summary. Prepared on a machine
# without a GPU; meant to run in one go within a few minutes of a 15-minute GPU lease.
#
# Finds: CUDA's runtime and NCCL through cmake/cohort_cuda.cmake (a toolkit, else pip's wheels
# under PyTorch's Python, default /opt/torch/.venv); Abseil, Gloo, nlohmann-json, CLI11 and
# GoogleTest installed, else in .gpu-deps/ (scripts/gpu/bundle_deps.sh, carried with the tree).
# Needs cmake >= 3.25, a C++17 compiler and ninja or make on the machine: it says which is missing.
#
# --train: the training build instead (COHORT_TRAIN_ONLY=ON with COHORT_CUDA=ON, against the
# LibTorch of PyTorch's install; the bundle made with bundle_deps.sh --train), building
# cohort-bench, cohort-launch and the Fashion-MNIST trial, then the side-by-side of
# bench/train_vs_torch.py on the GPU: resnet18 always (synthetic data), cnn and mlp when the
# Fashion-MNIST files are there (COHORT_DATA_DIR, else /usr/share/datasets/fashion-mnist).
#
# Usage: scripts/gpu/device_check.sh [--train] [-j N] [--build-dir DIR] [--no-build|--no-tests]
#                                    [--deadline SECONDS] [--only STEP,...]
#   --no-tests: configure and build only; --no-build: run the tests of an earlier build (so a
#   session can build both configurations at once and run the GPU steps one after the other).
#   --deadline: every step ends within SECONDS of the start; a step with under 10 s left is
#   skipped, saying so (the steps run in the order of their importance to issue 17).
#   --only: run only these test steps (their names as in the logs: train_vs_torch_256, ...).
#   Results: printed, and under $OUT (when set) as device_check/*.log.
# Exit status: 0 when everything built and the tests passed (or skipped saying why), else 1.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=16
build=$root/build-device
train=0
do_build=1
do_tests=1
deadline=0
only=""
while [ $# -gt 0 ]; do
  case $1 in
    --train) train=1; build=$root/build-device-train; shift ;;
    -j) jobs=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-tests) do_tests=0; shift ;;
    --deadline) deadline=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "device_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
logs=${OUT:-$build}/device_check
mkdir -p "$logs"
deps=$root/.gpu-deps
python=${COHORT_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$python" ] || python=$(command -v python3 || true)
started=$(date +%s)
failures=()

# The bundle, packed (bundle_deps.sh --pack) when it travelled that way.
if [ ! -d "$deps" ] && [ -f "$deps.tar.xz" ]; then
  tar -C "$root" -xJf "$deps.tar.xz"
fi
# The bundle's libraries are loaded by what is built against them (tests too, --no-build).
if [ -d "$deps/usr" ]; then
  export LD_LIBRARY_PATH="$deps/usr/lib:$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

say() { echo "== device_check [$(( $(date +%s) - started ))s] $*"; }

# Runs a step with a time limit (cut to what --deadline leaves), its output in $logs/<name>.log
# (its tail printed on failure).
step() {
  local name=$1 limit=$2; shift 2
  case $name in
    configure|build) ;;
    *) [ -n "$only" ] && [[ ",$only," != *",$name,"* ]] && return 1 ;;
  esac
  if [ "$deadline" -gt 0 ]; then
    local left=$(( deadline - ($(date +%s) - started) ))
    if [ $left -lt 10 ]; then
      say "$name SKIPPED: ${left}s left of the ${deadline}s deadline"
      failures+=("$name(skipped)")
      return 1
    fi
    [ $left -lt "$limit" ] && limit=$left
  fi
  say "$name: $*"
  if timeout "$limit" "$@" >"$logs/$name.log" 2>&1; then
    return 0
  fi
  local rc=$?
  say "$name FAILED (exit $rc$([ $rc = 124 ] && echo ", after ${limit}s")); last lines:"
  tail -40 "$logs/$name.log"
  failures+=("$name")
  return 1
}

describe_machine() {
  say "machine"
  { if command -v nvidia-smi >/dev/null; then
      nvidia-smi -L
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    else
      echo "nvidia-smi: not found"
    fi
    for tool in cmake ninja make g++ c++ nvcc; do
      printf '%-6s %s\n' "$tool" "$(command -v $tool >/dev/null && $tool --version | head -1 || echo missing)"
    done
    [ -n "$python" ] && "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' 2>&1
    # Does PyTorch's LibTorch export Gloo's or protobuf's symbols (a clash with Debian's)?
    [ $train = 1 ] && "$python" -c 'import torch, os; print(os.path.dirname(torch.__file__))' \
      2>/dev/null | while read -r t; do
        ls "$t/lib" | head -30
        echo "exported gloo symbols: $(nm -D --defined-only "$t/lib/libtorch_cpu.so" | grep -c gloo)"
        echo "exported protobuf symbols: $(nm -D --defined-only "$t/lib/libtorch_cpu.so" \
          | grep -c "google.*protobuf")"
      done
    echo ".gpu-deps: $([ -d "$deps" ] && du -sh "$deps" | cut -f1 || echo absent)"
  } 2>&1 | tee "$logs/machine.log"
}

configure() {
  local generator=Ninja prefix=""
  command -v ninja >/dev/null || generator="Unix Makefiles"
  [ -d "$deps/usr" ] && prefix="$deps/usr"
  local only=-DCOHORT_COMM_ONLY=ON
  if [ $train = 1 ]; then
    only=-DCOHORT_TRAIN_ONLY=ON
    # LibTorch from PyTorch's install (its CUDA build), after the bundle's prefix.
    local torch_prefix
    torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
    prefix="${prefix:+$prefix;}$torch_prefix"
  fi
  step configure 300 cmake -S "$root" -B "$build" -G "$generator" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_CUDA=ON $only \
    ${prefix:+"-DCMAKE_PREFIX_PATH=$prefix"} ${python:+-DCOHORT_PYTHON=$python}
  grep -E "CUDA|NCCL|Torch" "$logs/configure.log"
}

build_targets() {
  if [ $train = 1 ]; then
    # -k 0: every compile error in one go (a LibTorch of another version than Debian's).
    step build 480 cmake --build "$build" -j "$jobs" --target cohort-bench cohort-launch \
      fashion_mnist_trial optim_test mixed_precision_test device_wait_test data_parallel_test \
      train_worker -- $([ -f "$build/build.ninja" ] && echo -k 0 || echo -k)
    return
  fi
  step build 420 cmake --build "$build" -j "$jobs" --target \
    nccl_collectives_test nccl_collective_worker collectives_test collective_worker \
    launch_test cohort-launch launch_test_worker
}

# The training build's GPU steps, in the order of what has not yet run on a GPU: the tests of the
# device code (optimizer, mixed precision, the deadline-bound wait, the gradient reducer), the
# example with mixed precision and with aggregation, the resnet18 kernel comparison, then the
# measurements an earlier session made already (the plain example, the batch-64 side-by-side).
run_train() {
  local data=${COHORT_DATA_DIR:-/usr/share/datasets/fashion-mnist}
  train_unit_tests "$data"
  [ -d "$data" ] && train_example "$data" amp aggregation
  # The larger model at a batch that keeps the GPU busy: near its compute-bound throughput;
  # rounds alternating which side runs first on a warm GPU; then 3 steps of each side under
  # LibTorch's profiler, compared kernel by kernel (why Cohort's resnet18 was 3-5 % short on
  # 2026-11-28), and which cuDNN/cuBLAS each side loaded.
  step train_vs_torch_256 240 "$python" "$root/bench/train_vs_torch.py" --bin-dir "$build/bin" \
    --device cuda --models resnet18 --batch 256 --steps 50 --warmup 10 --repeats 2 \
    --trace-dir "$logs/traces" --trace-steps 3
  tail -45 "$logs/train_vs_torch_256.log"
  [ -d "$data" ] && train_example "$data" plain
  local models=resnet18
  [ -d "$data" ] && models=cnn,mlp,resnet18
  step train_vs_torch 300 "$python" "$root/bench/train_vs_torch.py" --bin-dir "$build/bin" \
    --device cuda --models "$models" --batch 64 --steps 100 --warmup 10
  tail -12 "$logs/train_vs_torch.log"
}

train_unit_tests() {
  local data=$1
  # FusedSGD's multi-tensor path on the GPU against LibTorch's SGD (and the CPU cases).
  step optim_test 120 "$build/tests/optim_test" --gtest_filter='FusedSgdTest.*'
  grep -E "^\[ +(OK|SKIPPED|FAILED) +\]|max abs diff" "$logs/optim_test.log" | head -12
  # Autocast and the scaler's CUDA unscale; the deadline-bound wait for the compute stream.
  step mixed_precision 120 "$build/tests/mixed_precision_test"
  step device_wait 120 "$build/tests/device_wait_test"
  grep -hE "^\[ +(OK|SKIPPED|FAILED) +\]" "$logs/mixed_precision.log" "$logs/device_wait.log"
  # The gradient reducer on the GPU (device buckets, NCCL), then two CPU ranks over Gloo in this
  # build: PyTorch's libtorch_cpu exports Gloo's symbols beside Debian's libgloo.
  step reducer_gpu 300 env COHORT_BIN_DIR="$build/bin" COHORT_TEST_BIN_DIR="$build/tests" \
    COHORT_DATA_DIR="$data" "$build/tests/data_parallel_test" --gtest_filter='*Gpu*'
  grep -E "^\[ +(OK|SKIPPED|FAILED) +\]|fp16|Failure|diff" "$logs/reducer_gpu.log" | head -12
  step gloo_cpu 120 "$build/bin/cohort-launch" --slots 2 -- "$build/bin/cohort-bench" train \
    --model resnet18 --per-slot-batch 2 --steps 3 --warmup 1 --transport gloo --device cpu
  tail -2 "$logs/gloo_cpu.log"
}

# The Fashion-MNIST example on one GPU slot through cohort-launch, with the config and seed of the
# CPU run it is compared with (docs/performance.md); variants: plain, amp (fp16 autocast, loss
# scaling), aggregation (aggregation_frequency 2: the gradient reducer's device buckets).
train_example() {
  local data=$1 variant config; shift
  for variant in "$@"; do
    config=$root/examples/fashion_mnist/distributed.yaml
    case $variant in
      amp) config=$build/amp.yaml
        sed 's/^optimizations:$/optimizations:\n  mixed_precision: O1/' \
          "$root/examples/fashion_mnist/distributed.yaml" >"$config" ;;
      aggregation) config=$build/aggregation.yaml
        sed 's/^optimizations:$/optimizations:\n  aggregation_frequency: 2/' \
          "$root/examples/fashion_mnist/distributed.yaml" >"$config" ;;
    esac
    step "fashion_mnist_$variant" 300 env COHORT_DATA_DIR="$data" COHORT_TRIAL_SEED=20261128 \
      "$build/bin/cohort-launch" --slots 1 --gpus 0 -- "$build/bin/fashion_mnist_trial" \
      --config "$config" --run-dir "$build/fashion_mnist_$variant"
    grep -E "mixed precision|batch 2000/|validation after" "$logs/fashion_mnist_$variant.log" \
      | tail -6
    grep -h validation "$build/fashion_mnist_$variant/metrics.jsonl" 2>/dev/null | tail -4
  done
}

run_tests() {
  if [ $train = 1 ]; then
    run_train
    return
  fi
  # The NCCL suite (one rank per GPU), the GPU-slot launcher test, and the CPU suite's shm
  # cases on this machine as a control.
  step nccl_test 300 ctest --test-dir "$build" -R '^nccl_collectives_test$' -V
  grep -E "\[ +(OK|SKIPPED|FAILED) +\] [A-Z]|PASS rank|tests passed" "$logs/nccl_test.log" | head -40
  step launch_gpus 120 env COHORT_BIN_DIR="$build/bin" COHORT_TEST_BIN_DIR="$build/tests" \
    "$build/tests/launch_test" --gtest_filter='*Gpu*:*BadArguments*'
  step cpu_control 300 env COHORT_BIN_DIR="$build/bin" COHORT_TEST_BIN_DIR="$build/tests" \
    "$build/tests/collectives_test" --gtest_filter='Shm/*EveryCollective*'
}

if [ $do_build = 1 ]; then
  describe_machine
  configure && build_targets || do_tests=0
fi
if [ $do_tests = 1 ]; then
  run_tests
fi
say "done in $(( $(date +%s) - started ))s; logs in $logs"
if [ ${#failures[@]} -gt 0 ]; then
  say "FAILED: ${failures[*]}"
  exit 1
fi
say "all steps passed"
