#include "wire/system_metrics.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

absl::StatusOr<GpuMetricsRecord> ParseGpu(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  GpuMetricsRecord gpu;
  r.Required("uuid", &gpu.uuid, kMaxGpuUuidBytes);
  if (r.ok() && gpu.uuid.empty()) r.Fail("uuid", "must not be empty");
  r.Required("gpu_util", &gpu.gpu_util, {.min = 0, .max = 100});
  r.Required("gpu_free_memory", &gpu.gpu_free_memory, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return gpu;
}

// The series of `metrics` (the record's "metrics" object, at most kMaxSystemSeries): names of
// at most kMaxMetricNameBytes, each value a finite number >= 0.
absl::StatusOr<std::map<std::string, double>> ParseSeries(const Json& metrics,
                                                          absl::string_view context) {
  const std::string where = absl::StrCat(context, ": \"metrics\"");
  FieldReader r(metrics, where);
  std::map<std::string, double> series;
  for (const auto& [name, value] : metrics.items()) {
    if (name.size() > kMaxMetricNameBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": series names must be at most ",
                                                     kMaxMetricNameBytes, " bytes, got one of ",
                                                     name.size()));
    }
    r.Required(name.c_str(), &series[name], {.min = 0});
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return series;
}

}  // namespace

Json SystemMetricsRecord::ToJson() const {
  Json gpu_array = Json::array();
  for (const GpuMetricsRecord& gpu : gpus) {
    gpu_array.push_back(
        {{"uuid", gpu.uuid}, {"gpu_util", gpu.gpu_util}, {"gpu_free_memory", gpu.gpu_free_memory}});
  }
  return {{"time", time}, {"agent", agent}, {"metrics", metrics}, {"gpus", gpu_array}};
}

absl::StatusOr<SystemMetricsRecord> ParseSystemMetricsRecord(const Json& json,
                                                             absl::string_view context) {
  FieldReader r(json, std::string(context));
  SystemMetricsRecord rec;
  r.Required("time", &rec.time, {.min = 0, .max = kMaxUnixSeconds});
  r.Required("agent", &rec.agent, kMaxSafeNameBytes);
  if (r.ok() && !IsSafeName(rec.agent)) r.Fail("agent", SafeNameError(rec.agent));
  Json metrics;
  r.Object("metrics", &metrics, FieldReader::kRequired);
  if (r.ok() && metrics.size() > kMaxSystemSeries) {
    r.Fail("metrics",
           absl::StrCat("must have at most ", kMaxSystemSeries, " series, got ", metrics.size()));
  }
  COHORT_RETURN_IF_ERROR(r.status());
  COHORT_ASSIGN_OR_RETURN(rec.metrics, ParseSeries(metrics, context));
  r.Array("gpus", &rec.gpus, kMaxGpus, FieldReader::kOptional, ParseGpu);
  if (r.ok()) {
    std::set<std::string> uuids;
    for (const GpuMetricsRecord& gpu : rec.gpus) {
      if (!uuids.insert(gpu.uuid).second) {
        r.Fail("gpus", absl::StrCat("has uuid \"", gpu.uuid, "\" twice"));
        break;
      }
    }
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return rec;
}

std::string CurrentSeriesName(absl::string_view name) {
  return std::string(name == kOldFreeMemorySeries ? kFreeMemorySeries : name);
}

std::string OldSeriesName(absl::string_view name) {
  return name == kFreeMemorySeries ? kOldFreeMemorySeries : "";
}

SeriesUnit SystemSeriesUnit(absl::string_view name) {
  if (name == "cpu_util_simple" || name == "gpu_util") return SeriesUnit::kPercent;
  if (name == kFreeMemorySeries || name == kOldFreeMemorySeries || name == "gpu_free_memory") {
    return SeriesUnit::kBytes;
  }
  if (name == "disk_iops") return SeriesUnit::kPerSecond;
  if (absl::StartsWith(name, "net_throughput_") || absl::StartsWith(name, "disk_throughput_")) {
    return SeriesUnit::kBytesPerSecond;
  }
  return SeriesUnit::kNone;
}

}  // namespace cohort::wire
