#include "sampler/proc_counter_source.h"

#include <utility>

#include "common/logging.h"

namespace cohort::sampler {

ProcCounterSource::ProcCounterSource(ProcCounterSourceOptions options)
    : options_(std::move(options)) {
  if (options_.nvml_library.empty()) {
    nvml_status_ = absl::FailedPreconditionError("no NVML library chosen");
    return;
  }
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load(options_.nvml_library);
  if (nvml.ok()) {
    nvml_ = *std::move(nvml);
  } else {
    nvml_status_ = nvml.status();
    COHORT_LOG(INFO) << "system metrics without GPUs: " << nvml_status_;
  }
}

template <typename T>
std::optional<T> ProcCounterSource::Keep(Part part, absl::StatusOr<T> value) {
  if (value.ok()) {
    failing_[part] = false;
    return *value;
  }
  if (!failing_[part]) {
    COHORT_LOG(WARNING) << "system metrics: " << value.status();
    failing_[part] = true;
  }
  return std::nullopt;
}

SystemCounters ProcCounterSource::Read() {
  SystemCounters counters;
  counters.cpu = Keep(kCpu, ReadCpuTimes(options_.proc_stat));
  counters.memory = Keep(kMemory, ReadMemoryInfo(options_.proc_meminfo));
  counters.net = Keep(kNet, ReadNetCounters(options_.net_interfaces, options_.proc_net_dev));
  counters.disk = Keep(kDisk, ReadDiskCounters(options_.proc_diskstats, options_.sys_block));
  if (nvml_ != nullptr) counters.gpus = nvml_->Read();
  return counters;
}

}  // namespace cohort::sampler
