#include "runtime/metrics.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"

namespace cohort::runtime {
namespace {

std::string Names(const std::map<std::string, double>& metrics) {
  std::vector<std::string> names;
  for (const auto& [name, value] : metrics) names.push_back(name);
  return absl::StrJoin(names, ",");
}

}  // namespace

absl::StatusOr<std::map<std::string, double>> WeightedAverageMetrics(
    comm::Communicator& comm, const std::map<std::string, double>& metrics, double weight) {
  const std::string names = Names(metrics);
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.Allgather(names));
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] != names) {
      return absl::InvalidArgumentError(absl::StrCat(
          "averaging metrics: rank ", comm.rank(), " reports [", names, "] but rank ", r,
          " reports [", all[r], "]; every rank must report the same metrics"));
    }
  }
  std::vector<double> sums;
  sums.reserve(metrics.size() + 1);
  for (const auto& [name, value] : metrics) sums.push_back(value * weight);
  sums.push_back(weight);
  COHORT_RETURN_IF_ERROR(Annotate(
      comm.Allreduce(sums.data(), sums.size(), comm::DataType::kFloat64, comm::ReduceOp::kSum),
      "averaging metrics"));
  const double total = sums.back();
  if (total <= 0) {
    return absl::InvalidArgumentError(
        "averaging metrics: every rank passed weight 0 (no samples anywhere)");
  }
  std::map<std::string, double> out;
  size_t i = 0;
  for (const auto& [name, value] : metrics) out[name] = sums[i++] / total;
  return out;
}

absl::StatusOr<std::map<std::string, double>> AverageMetrics(
    comm::Communicator& comm, const std::map<std::string, double>& metrics) {
  return WeightedAverageMetrics(comm, metrics, 1.0);
}

}  // namespace cohort::runtime
