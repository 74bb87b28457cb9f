#!/bin/sh
# The allreduce matrix of docs/design/0021 and docs/performance.md: for 2 and 4 ranks and 4 KiB
# to 64 MiB, Cohort's default (the paths measured on this machine at the first point of each rank
# count, into a cache of this run's own, then reused; its --explain table is printed first), the
# staged path forced (COHORT_SHM_CMA_MIN_BYTES=0), the single-copy path forced from the smallest
# size (=1), and OpenMPI (bench/mpi_allreduce.c under mpirun), one run each, 30 timed
# iterations. Cohort prints JSON lines (with memcpy_GBps); OpenMPI its time.
#
#   bench/allreduce_matrix.sh [BUILD_DIR]     # default: build
set -eu
build=${1:-build}
mpi=$(mktemp -d)/mpi_allreduce
COHORT_COMM_CACHE_DIR=$(mktemp -d)
export COHORT_COMM_CACHE_DIR
mpicc -O2 "$(dirname "$0")/mpi_allreduce.c" -o "$mpi"
run() {  # env assignment or "", ranks, bytes
  env $1 OMP_NUM_THREADS=1 timeout 120 "$build/bin/cohort-launch" --slots "$2" -- \
    "$build/bin/cohort-bench" allreduce --bytes "$3" --iters 30 --warmup 5 2>/dev/null |
    grep -o '{"op".*'
}
for ranks in 2 4; do
  env OMP_NUM_THREADS=1 timeout 120 "$build/bin/cohort-launch" --slots "$ranks" -- \
    "$build/bin/cohort-bench" allreduce --bytes 4096 --iters 1 --explain 2>/dev/null | sed 's/^\[rank=0\] //' | grep -v '^{'
  for bytes in 4096 65536 1048576 16777216 67108864; do
    echo "ranks=$ranks bytes=$bytes"
    echo "  default: $(run "" "$ranks" "$bytes")"
    echo "  staged:  $(run COHORT_SHM_CMA_MIN_BYTES=0 "$ranks" "$bytes")"
    echo "  cma:     $(run COHORT_SHM_CMA_MIN_BYTES=1 "$ranks" "$bytes")"
    echo "  openmpi: $(timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$mpi" "$bytes" 30 5 2>/dev/null | tail -1)"
  done
done
