#pragma once
// SystemMetrics: one machine's averaged system metrics over one period, as SystemSampler
// emits them, with Determined's series names and units. Thread-compatible value type.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace cohort::sampler {

// Series names (Determined's) and their units.
inline constexpr char kCpuUtilSimple[] = "cpu_util_simple";          // % of all CPUs' time, 0..100
inline constexpr char kMemoryFree[] = "free_memory";                 // bytes (MemAvailable)
inline constexpr char kNetThroughputSent[] = "net_throughput_sent";  // bytes/s
inline constexpr char kNetThroughputRecv[] = "net_throughput_recv";  // bytes/s
inline constexpr char kDiskIops[] = "disk_iops";  // completed reads + writes per second
inline constexpr char kDiskThroughputRead[] = "disk_throughput_read";    // bytes/s
inline constexpr char kDiskThroughputWrite[] = "disk_throughput_write";  // bytes/s
inline constexpr char kGpuUtil[] = "gpu_util";                           // %, per GPU
inline constexpr char kGpuFreeMemory[] = "gpu_free_memory";              // bytes, per GPU

struct GpuMetrics {
  std::string uuid;
  double gpu_util = 0;         // %
  double gpu_free_memory = 0;  // bytes
};

struct SystemMetrics {
  absl::Time time;  // the end of the period: its last sample's time
  // The machine-wide series above that had data in the period; a source that could not be
  // read (no /proc/diskstats in a container, say) has no entry rather than a 0.
  std::map<std::string, double> metrics;
  std::vector<GpuMetrics> gpus;  // by uuid; empty on a machine without NVML
};

}  // namespace cohort::sampler
