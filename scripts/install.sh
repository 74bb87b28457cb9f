#!/usr/bin/env bash
# Takes a bare Debian 12 machine to one that can build and run Cohort, and with --test or
# --bench to one that can also test or benchmark it. Idempotent: when every package asked for is
# already installed it only checks, in about a second.
#   scripts/install.sh           what the main job needs: the toolchain, the libraries Cohort
#                                builds against, the example's data (scripts/main.sh)
#   scripts/install.sh --test    and what only the tests use (scripts/test.sh): the browser for
#                                the web interface's test, clang for the thread-safety check,
#                                openssl for the TLS tests' certificates, ip for network
#                                namespaces, npm's s3rver (an S3-compatible server) in
#                                /opt/cohort-test-tools, Slurm and munge for src/slurm's tests
#   scripts/install.sh --bench   and the benchmarks' peers: PyTorch DDP, OpenMPI, iperf3, awscli
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  # libraries Cohort builds against
  libtorch-dev libgloo-dev libabsl-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libcpp-httplib-dev libsqlite3-dev sqlite3 libssl-dev zlib1g-dev libarchive-dev libsodium-dev
  # PostgreSQL's client library, libpq: the master's second database backend (`--db
  # postgresql://...`, docs/postgresql.md); the PostgreSQL server itself only the tests install
  libpq-dev
  # object stores (src/objstore): libcurl signs and sends S3 requests, expat reads the answers
  libcurl4-openssl-dev libexpat1-dev
  # the master's HTTP engine (src/master/http/http_server.h)
  libmicrohttpd-dev
  # GoogleTest and Google Benchmark: the build configures its tests and benchmarks beside the
  # programs (scripts/build.sh TARGET builds only what is asked for)
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
  # the CLI's local cluster finds its processes with ps; python3 runs the tests' scripts
  procps python3
)
TEST_PACKAGES=(
  # multi-host tests: network namespaces (ip netns)
  iproute2
  # TLS tests: the certificates are made with the openssl command
  openssl
  # the web interface's browser test (tests/web): headless chromium driven by selenium
  chromium chromium-driver python3-selenium
  # the thread-safety check of the master and the agent (tests/thread_safety): clang's analysis
  clang
  # src/slurm's tests: a real Slurm cluster on loopback (src/slurm/testing/slurm_cluster.h),
  # whose daemons the tests start themselves (the packages' own services are kept from
  # starting while they install: see no_service_starts below)
  slurm-wlm munge
  # the database tests' throwaway PostgreSQL server (src/master/db/testing/postgres_server.h),
  # started by the tests themselves (the package's own cluster is kept from starting)
  postgresql
)
BENCH_PACKAGES=(
  # the peer for side-by-side benchmarks: PyTorch DDP / torch.distributed with Gloo
  python3-torch python3-numpy
  # the emulated cluster network's link measurement (bench/netcluster --measure-link) and
  # OpenMPI, the collectives' peer in bench/netcluster_allreduce.py
  iperf3 openmpi-bin libopenmpi-dev iproute2
  # the object stores' peer: `aws s3 cp` (bench/s3_checkpoint_bench.sh)
  awscli
)
WANT_S3RVER=0
for arg in "$@"; do
  case "$arg" in
    --test) PACKAGES+=("${TEST_PACKAGES[@]}"); WANT_S3RVER=1 ;;
    --bench) PACKAGES+=("${BENCH_PACKAGES[@]}"); WANT_S3RVER=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install: unknown option $arg (use --test, --bench or none)" >&2; exit 2 ;;
  esac
done

# npm's s3rver (the tests' S3-compatible server, src/objstore/testing/s3rver.h), pinned; Debian's
# nodejs and npm unless a node with its npm is already there (NodeSource's conflicts with them).
S3RVER_DIR=/opt/cohort-test-tools
install_s3rver() {
  [ "$WANT_S3RVER" = 1 ] || return 0
  if [ -x "$S3RVER_DIR/node_modules/.bin/s3rver" ]; then return 0; fi
  if ! command -v npm >/dev/null; then
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends nodejs npm
  fi
  echo "install: npm install s3rver@3.7.1 into $S3RVER_DIR"
  $SUDO mkdir -p "$S3RVER_DIR"
  (cd "$S3RVER_DIR" && $SUDO npm install --no-audit --no-fund --loglevel=error s3rver@3.7.1)
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

missing=()
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install: all ${#PACKAGES[@]} packages present"
  install_s3rver
  exit 0
fi

# The packages' services (munge, slurmctld, slurmd) must not start while they install: without
# a configuration slurmd's init script fails, and its postinst with it, on a machine without
# systemd; and no test wants the system's daemons. Debian's policy-rc.d (exit 101: "not
# allowed") does that; one the machine already has is left alone.
no_service_starts() {
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d > /dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
}

echo "install: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
no_service_starts
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
install_s3rver
echo "install: done"
