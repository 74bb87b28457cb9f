#pragma once
// The machine's raw counters as Linux publishes them in /proc: CPU time (/proc/stat), memory
// (/proc/meminfo), network bytes (/proc/net/dev) and disk operations and bytes
// (/proc/diskstats). Each has a pure parser of the file's text, tested on fixed texts, and a
// reader of the real file. Counters are cumulative since boot; SystemSampler turns their
// differences into rates.
// Errors are InvalidArgument (the text does not parse: the message names the file and line),
// NotFound (a field or interface the caller needs is absent) or the file's read error.
// Thread-safe (stateless functions).
//
// Example:
//   absl::StatusOr<NetCounters> before = ReadNetCounters({"lo"});
//   ... send bytes over loopback ...
//   absl::StatusOr<NetCounters> after = ReadNetCounters({"lo"});
//   // after->sent_bytes - before->sent_bytes: the bytes sent in between

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::sampler {

inline constexpr char kProcStat[] = "/proc/stat";
inline constexpr char kProcMeminfo[] = "/proc/meminfo";
inline constexpr char kProcNetDev[] = "/proc/net/dev";
inline constexpr char kProcDiskstats[] = "/proc/diskstats";
inline constexpr char kSysBlock[] = "/sys/block";

// CPU time of all CPUs together, in jiffies (the "cpu" line of /proc/stat). `busy` excludes
// idle and iowait (as psutil's cpu_percent, Determined's cpu_util_simple); `total` is every
// state but guest time, which user and nice already hold.
struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};

// From /proc/meminfo, in bytes. `available` is MemAvailable (what can be allocated without
// swapping); kernels before 3.14 lack it and get MemFree + Buffers + Cached instead.
struct MemoryInfo {
  uint64_t total = 0;
  uint64_t available = 0;
};

// Bytes through the chosen network interfaces since boot (/proc/net/dev).
struct NetCounters {
  uint64_t sent_bytes = 0;
  uint64_t received_bytes = 0;
};

// Completed operations and bytes of the chosen disks since boot (/proc/diskstats; the kernel
// counts sectors of 512 bytes whatever the device's sector size).
struct DiskCounters {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t read_bytes = 0;
  uint64_t written_bytes = 0;
};

// Which disks /proc/diskstats lines count: true for a device name to include.
using DiskFilter = std::function<bool(absl::string_view name)>;

// The text of a file under /proc or /sys (whose reported size is 0, so it is read to its end),
// at most 16 MiB. Errors name the path and errno's text.
absl::StatusOr<std::string> ReadProcFile(const std::string& path);

// The "cpu" line of /proc/stat text. `file` names the source in errors.
absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view text, absl::string_view file = kProcStat);
absl::StatusOr<CpuTimes> ReadCpuTimes(const std::string& path = kProcStat);

// MemTotal and MemAvailable of /proc/meminfo text (values in kB, returned in bytes). NotFound
// when MemTotal is missing, or MemAvailable and one of its substitutes.
absl::StatusOr<MemoryInfo> ParseMeminfo(absl::string_view text,
                                        absl::string_view file = kProcMeminfo);
absl::StatusOr<MemoryInfo> ReadMemoryInfo(const std::string& path = kProcMeminfo);

// Bytes received and sent, summed over `interfaces`, or over every interface but loopback
// ("lo") when `interfaces` is empty. NotFound names a chosen interface the text lacks.
absl::StatusOr<NetCounters> ParseNetDev(absl::string_view text,
                                        const std::vector<std::string>& interfaces,
                                        absl::string_view file = kProcNetDev);
absl::StatusOr<NetCounters> ReadNetCounters(const std::vector<std::string>& interfaces,
                                            const std::string& path = kProcNetDev);

// Reads, writes and their bytes, summed over the devices `include` accepts.
absl::StatusOr<DiskCounters> ParseDiskstats(absl::string_view text, const DiskFilter& include,
                                            absl::string_view file = kProcDiskstats);

// The physical whole disks: the entries of `sys_block` (/sys/block lists whole disks, never
// partitions) that have a `device` link. Virtual block devices (loop, ram, zram, dm-*, md*)
// have none and are left out, since their I/O is also counted on the disks beneath them.
// An error names `sys_block` when it cannot be listed.
absl::StatusOr<std::vector<std::string>> ListPhysicalDisks(
    const std::string& sys_block = kSysBlock);

// /proc/diskstats summed over ListPhysicalDisks().
absl::StatusOr<DiskCounters> ReadDiskCounters(const std::string& path = kProcDiskstats,
                                              const std::string& sys_block = kSysBlock);

}  // namespace cohort::sampler
