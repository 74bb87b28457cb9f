#pragma once
// CPU time from Linux's /proc, for benchmarks that say how busy the machine was, what the
// hypervisor took from it (steal: a virtual machine's neighbours, which make runs incomparable)
// and what one process used. Each returns nullopt where the file cannot be read.
//
// Example:
//   std::optional<MachineCpu> before = ReadMachineCpu();
//   ...  // the load
//   std::optional<MachineCpu> after = ReadMachineCpu();
//   if (before && after) std::printf("steal %.1f s\n", after->steal - before->steal);

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace cohort::bench {

// The machine's CPU seconds so far, all cores together.
struct MachineCpu {
  double busy = 0;   // user, nice, system, irq and softirq
  double steal = 0;  // taken by the hypervisor for other guests
};

inline double TicksToSeconds(uint64_t ticks) {
  const long hz = ::sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(ticks) / static_cast<double>(hz) : 0.0;
}

// /proc/stat's first line: cpu user nice system idle iowait irq softirq steal ...
inline std::optional<MachineCpu> ReadMachineCpu() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t f[8] = {};
  if (!(stat >> cpu) || cpu != "cpu") return std::nullopt;
  for (uint64_t& field : f) {
    if (!(stat >> field)) return std::nullopt;
  }
  return MachineCpu{TicksToSeconds(f[0] + f[1] + f[2] + f[5] + f[6]), TicksToSeconds(f[7])};
}

// User and system seconds of process `pid` (/proc/PID/stat's 14th and 15th fields; the command
// name in field 2 has no spaces for the processes benchmarks start).
inline std::optional<double> ProcessCpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string field;
  uint64_t ticks = 0;
  for (int i = 1; i <= 15; ++i) {
    if (!(stat >> field)) return std::nullopt;
    if (i >= 14) ticks += std::stoull(field);
  }
  return TicksToSeconds(ticks);
}

}  // namespace cohort::bench
