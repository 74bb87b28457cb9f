#pragma once
// ProcCounterSource: the CounterSource of the machine it runs on: CPU, memory, network and
// disk counters from /proc and /sys (proc_counters.h), GPUs through NVML when it loads
// (nvml_reader.h). A part that fails is left out of the reading; its error is logged once as a
// warning (and once more if it recovers and fails again), so a sampler running for hours on a
// machine without, say, /proc/diskstats logs one line.
// Thread-compatible: one thread reads at a time (the sampler's).
//
// Example:
//   ProcCounterSource source({.net_interfaces = {"eth0"}});
//   SystemCounters now = source.Read();

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sampler/counter_source.h"
#include "sampler/nvml_reader.h"

namespace cohort::sampler {

struct ProcCounterSourceOptions {
  // The interfaces whose bytes count; empty: every interface but loopback ("lo").
  std::vector<std::string> net_interfaces;
  // The files read; tests point them elsewhere.
  std::string proc_stat = kProcStat;
  std::string proc_meminfo = kProcMeminfo;
  std::string proc_net_dev = kProcNetDev;
  std::string proc_diskstats = kProcDiskstats;
  std::string sys_block = kSysBlock;
  // The NVML library loaded at construction; empty: no GPUs, NVML is not tried.
  std::string nvml_library = kNvmlLibrary;
};

class ProcCounterSource : public CounterSource {
 public:
  // Loads NVML when options.nvml_library is set; without it (no library, no driver) the source
  // has no GPUs, which nvml_status() explains (logged at INFO).
  explicit ProcCounterSource(ProcCounterSourceOptions options = {});

  SystemCounters Read() override;

  // OK when NVML loaded; otherwise why there are no GPU readings.
  const absl::Status& nvml_status() const { return nvml_status_; }

 private:
  enum Part { kCpu, kMemory, kNet, kDisk, kParts };

  // Returns the value of `value` if it is OK; otherwise logs its error unless part's last
  // reading failed too, and returns nullopt.
  template <typename T>
  std::optional<T> Keep(Part part, absl::StatusOr<T> value);

  ProcCounterSourceOptions options_;
  std::unique_ptr<NvmlReader> nvml_;
  absl::Status nvml_status_;
  bool failing_[kParts] = {};
};

}  // namespace cohort::sampler
