#!/usr/bin/env bash
# Takes a bare Debian 12 machine to one that can build, test and benchmark Cohort.
# Idempotent: when every package is already installed it only checks, in about a second.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  # libraries Cohort builds against
  libtorch-dev libgloo-dev libabsl-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libcpp-httplib-dev libsqlite3-dev sqlite3 libssl-dev zlib1g-dev libarchive-dev libsodium-dev
  # the master's HTTP engine (src/master/http/http_server.h)
  libmicrohttpd-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # log policies' patterns: RE2 (Go's regexp syntax, linear time on untrusted lines)
  libre2-dev
  # TensorBoard event files: the Event record is a protobuf message
  libprotobuf-dev protobuf-compiler
  # the master's GET /metrics in Prometheus text format (core library)
  prometheus-cpp-dev
  # fast BLAS for LibTorch on CPU (the reference BLAS is ~10x slower)
  libopenblas0-pthread
  # data: Fashion-MNIST under /usr/share/datasets/fashion-mnist
  dataset-fashion-mnist
  # the peer for side-by-side benchmarks: PyTorch DDP / torch.distributed with Gloo
  python3 python3-torch python3-numpy
  # multi-process and multi-host tests: ps, kill, ip netns
  procps iproute2
  # the emulated cluster network's link measurement (bench/netcluster --measure-link) and
  # OpenMPI, the collectives' peer in bench/netcluster_allreduce.py
  iperf3 openmpi-bin libopenmpi-dev
  # TLS tests: the certificates are made with the openssl command
  openssl
  # the web interface's browser test (tests/web): headless chromium driven by selenium
  chromium chromium-driver python3-selenium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "install: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install: done"
