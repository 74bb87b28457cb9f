#pragma once
// CounterSource: where SystemSampler reads the machine's raw counters, the seam through which
// tests give it scripted values. ProcCounterSource (proc_counter_source.h) reads the real ones.
// Implementations are used by one thread at a time (the sampler's).

#include <optional>
#include <vector>

#include "sampler/nvml_reader.h"
#include "sampler/proc_counters.h"

namespace cohort::sampler {

// The counters at one moment. A part that could not be read is absent (nullopt, no GPUs), so
// the sampler leaves its series out instead of reporting a 0.
struct SystemCounters {
  std::optional<CpuTimes> cpu;
  std::optional<MemoryInfo> memory;
  std::optional<NetCounters> net;
  std::optional<DiskCounters> disk;
  std::vector<GpuReading> gpus;
};

class CounterSource {
 public:
  virtual ~CounterSource() = default;
  // Reads every counter now. Never fails as a whole: what cannot be read is left out.
  virtual SystemCounters Read() = 0;
};

}  // namespace cohort::sampler
