#pragma once
// NvmlReader: the GPUs' utilization and free memory through NVIDIA's management library,
// loaded at run time with dlopen("libnvidia-ml.so.1"), so Cohort builds and runs without
// NVIDIA's headers or driver. A machine without the library, or whose driver refuses to
// initialize, has no GPU series: Load() says why and the caller carries on without GPUs.
// Thread-safe: NVML is, and the reader holds no mutable state after Load().
//
// Example:
//   absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load();
//   if (!nvml.ok()) COHORT_LOG(INFO) << "no GPU metrics: " << nvml.status();
//   else for (const GpuReading& gpu : (*nvml)->Read()) ...

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cohort::sampler {
namespace internal {
struct NvmlApi;  // the NVML functions, resolved by dlsym
}  // namespace internal

inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

// One GPU at one moment.
struct GpuReading {
  std::string uuid;          // "GPU-8f6c...", stable across reboots and index orders
  double utilization = 0;    // % of the last sample period (1/6 s to 1 s) a kernel ran
  uint64_t free_memory = 0;  // bytes
};

class NvmlReader {
 public:
  // Opens `library` (a name the dynamic loader searches for, or a path) and initializes NVML.
  // NotFound when the library cannot be opened or lacks a function; Unavailable when
  // nvmlInit_v2 fails (no driver, no GPU) or the devices cannot be counted, naming NVML's
  // error.
  static absl::StatusOr<std::unique_ptr<NvmlReader>> Load(
      const std::string& library = kNvmlLibrary);

  // Shuts NVML down and closes the library.
  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;

  // The devices counted at Load().
  int device_count() const { return device_count_; }

  // One reading per device that answers; a device whose handle, UUID, utilization or memory
  // cannot be read (fallen off the bus, being reset) is left out of this reading.
  std::vector<GpuReading> Read() const;

 private:
  NvmlReader(void* library, std::unique_ptr<internal::NvmlApi> api, int device_count);

  void* library_;  // the dlopen handle
  std::unique_ptr<internal::NvmlApi> api_;
  int device_count_;
};

}  // namespace cohort::sampler
