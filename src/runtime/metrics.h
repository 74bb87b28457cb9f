#pragma once
// Metric reduction across workers (Determined's `average_training_metrics`): every rank passes
// its metrics for the same step and gets back the mean over ranks, or, weighted, the mean
// weighted by each rank's sample or batch count (validation metrics over uneven shards).
// No LibTorch. Collective: every rank must call it at the same point with the same metric
// names; a mismatch is an error naming the ranks and metrics, never a silent misalignment.
//
// Example:
//   std::map<std::string, double> m = {{"loss", loss}, {"accuracy", acc}};
//   COHORT_ASSIGN_OR_RETURN(m, AverageMetrics(*comm, m));

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"

namespace cohort::runtime {

// The mean over ranks of each metric.
absl::StatusOr<std::map<std::string, double>> AverageMetrics(
    comm::Communicator& comm, const std::map<std::string, double>& metrics);

// sum_r(weight_r * metric_r) / sum_r(weight_r); `weight` is this rank's sample or batch count
// (0 is allowed: the rank then contributes nothing). All weights 0: InvalidArgument.
absl::StatusOr<std::map<std::string, double>> WeightedAverageMetrics(
    comm::Communicator& comm, const std::map<std::string, double>& metrics, double weight);

}  // namespace cohort::runtime
