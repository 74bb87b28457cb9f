/* OpenMPI's MPI_Allreduce (float32 sum, in place) timed like cohort-bench allreduce: WARMUP untimed
 * then ITERS timed iterations; rank 0 prints {"time_s": median}. The peer in
 * bench/netcluster_allreduce.py, built there with mpicc.
 *   mpirun -np 2 mpi_allreduce BYTES ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int Compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce BYTES ITERS WARMUP\n");
    MPI_Finalize();
    return 2;
  }
  const size_t n = strtoull(argv[1], NULL, 10) / sizeof(float);
  const int iters = atoi(argv[2]), warmup = atoi(argv[3]);
  float* data = malloc(n * sizeof(float));
  double* times = malloc((size_t)(iters > 0 ? iters : 1) * sizeof(double));
  if (data == NULL || times == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup + iters; ++i) {
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (i >= warmup) times[i - warmup] = MPI_Wtime() - start;
  }
  if (rank == 0) {
    qsort(times, (size_t)iters, sizeof(double), Compare);
    printf("{\"time_s\": %.9f}\n", times[iters / 2]);
  }
  free(data);
  free(times);
  MPI_Finalize();
  return 0;
}
