#pragma once
// SystemMetricsRecord: one machine's system metrics over one period (a second by default), as
// the agent (or a node's local rank 0) sends them to the master while a profiled trial's batch
// is inside the profiling window (sampler/system_sampler.h measures them):
//
//   {"time":1700000000.5,"agent":"agent-1",
//    "metrics":{"cpu_util_simple":12.5,"free_memory":2.1e10,"net_throughput_sent":1200,
//               "net_throughput_recv":900,"disk_iops":3,"disk_throughput_read":0,
//               "disk_throughput_write":40960},
//    "gpus":[{"uuid":"GPU-8f6c...","gpu_util":37,"gpu_free_memory":1073741824}]}
//
// Names and units are Determined's (sampler/system_metrics.h lists them); a series the machine
// could not read is absent, not 0. "gpus" is optional (empty: a machine without NVML).
// Parsers name the record and the field ("system metrics: \"metrics\": \"disk_iops\" must be a
// number >= 0, got -1"); unknown fields are ignored.
// Thread-compatible value types; the functions are thread-safe.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

// At most 64 machine-wide series and 64 GPUs per record; a GPU's UUID is at most 96 bytes
// (NVML_DEVICE_UUID_V2_BUFFER_SIZE).
inline constexpr size_t kMaxSystemSeries = 64;
inline constexpr size_t kMaxGpus = 64;
inline constexpr size_t kMaxGpuUuidBytes = 96;

struct GpuMetricsRecord {
  std::string uuid;            // NVML's, "GPU-..." (required, not empty)
  double gpu_util = 0;         // % in [0, 100]
  double gpu_free_memory = 0;  // bytes, >= 0
};

struct SystemMetricsRecord {
  double time = 0;    // unix seconds of the period's end (required)
  std::string agent;  // the machine's agent id, a safe name (wire/limits.h; required)
  // Series name -> value, every value finite and >= 0 (required, may be empty).
  std::map<std::string, double> metrics;
  std::vector<GpuMetricsRecord> gpus;  // distinct uuids

  Json ToJson() const;
};

// `context` names the record in errors, e.g. "system metrics 3".
absl::StatusOr<SystemMetricsRecord> ParseSystemMetricsRecord(
    const Json& json, absl::string_view context = "system metrics");

// The unit of a system series (Determined's names, as sampler/system_metrics.h measures them),
// for showing its values; kNone for any other series (training and validation metrics).
enum class SeriesUnit { kNone, kPercent, kBytes, kBytesPerSecond, kPerSecond };
SeriesUnit SystemSeriesUnit(absl::string_view name);

// The free-memory series is "free_memory", Determined's name; Cohort wrote it as "memory_free"
// until issue 42. Queries accept the old name for one release (CurrentSeriesName), and trials
// stored before are read under it (Series: OldSeriesName).
inline constexpr char kFreeMemorySeries[] = "free_memory";
inline constexpr char kOldFreeMemorySeries[] = "memory_free";
// `name`, with the old free-memory name as the current one.
std::string CurrentSeriesName(absl::string_view name);
// The name a series was stored under before it was renamed; empty for one never renamed.
std::string OldSeriesName(absl::string_view name);

}  // namespace cohort::wire
