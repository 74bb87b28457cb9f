#include "sampler/proc_counters.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"

namespace cohort::sampler {
namespace {

// /proc files are small (diskstats on a machine with a thousand devices is ~150 KiB); the
// bound keeps a wrong path (a device, a pipe) from filling memory.
constexpr size_t kMaxProcFileBytes = 16 << 20;
constexpr uint64_t kSectorBytes = 512;
constexpr uint64_t kKibibyte = 1024;

absl::Status LineError(absl::string_view file, size_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, " line ", line, ": ", what));
}

std::vector<absl::string_view> Words(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

// words[first, first + count) as counters; an error names the word that is not one.
absl::StatusOr<std::vector<uint64_t>> Counters(const std::vector<absl::string_view>& words,
                                               size_t first, size_t count, absl::string_view file,
                                               size_t line) {
  if (words.size() < first + count) {
    return LineError(file, line,
                     absl::StrCat("expected at least ", count, " counters after '",
                                  absl::StrJoin(words.begin(), words.begin() + first, " "),
                                  "', got ", words.size() - std::min(first, words.size())));
  }
  std::vector<uint64_t> values(count);
  for (size_t i = 0; i < count; ++i) {
    if (!absl::SimpleAtoi(words[first + i], &values[i])) {
      return LineError(file, line,
                       absl::StrCat("'", words[first + i].substr(0, 32), "' is not a counter"));
    }
  }
  return values;
}

}  // namespace

absl::StatusOr<std::string> ReadProcFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::string text;
  char buffer[16384];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return absl::ErrnoToStatus(error, absl::StrCat("cannot read ", path));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxProcFileBytes) {
      close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, " is longer than ", kMaxProcFileBytes, " bytes"));
    }
  }
  close(fd);
  return text;
}

absl::StatusOr<CpuTimes> ParseProcStat(absl::string_view text, absl::string_view file) {
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::vector<absl::string_view> words = Words(line);
    if (words.empty() || words[0] != "cpu") continue;
    // user nice system idle, then (since Linux 2.6) iowait irq softirq, (2.6.11) steal; guest
    // and guest_nice follow but are already inside user and nice.
    const size_t count = std::clamp<size_t>(words.size() - 1, 4, 8);
    COHORT_ASSIGN_OR_RETURN(std::vector<uint64_t> jiffies,
                            Counters(words, 1, count, file, line_number));
    CpuTimes times;
    for (uint64_t value : jiffies) times.total += value;
    const uint64_t idle = jiffies[3] + (jiffies.size() > 4 ? jiffies[4] : 0);
    times.busy = times.total - idle;
    return times;
  }
  return absl::NotFoundError(absl::StrCat(file, " has no 'cpu' line"));
}

absl::StatusOr<CpuTimes> ReadCpuTimes(const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string text, ReadProcFile(path));
  return ParseProcStat(text, path);
}

absl::StatusOr<MemoryInfo> ParseMeminfo(absl::string_view text, absl::string_view file) {
  const absl::string_view keys[] = {
      "MemTotal:", "MemAvailable:", "MemFree:", "Buffers:", "Cached:"};
  constexpr size_t kKeys = sizeof(keys) / sizeof(keys[0]);
  bool found[kKeys] = {};
  uint64_t kib[kKeys] = {};
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::vector<absl::string_view> words = Words(line);
    if (words.empty()) continue;
    const size_t key = std::find(keys, keys + kKeys, words[0]) - keys;
    if (key == kKeys) continue;
    COHORT_ASSIGN_OR_RETURN(std::vector<uint64_t> value, Counters(words, 1, 1, file, line_number));
    found[key] = true;
    kib[key] = value[0];
  }
  if (!found[0]) return absl::NotFoundError(absl::StrCat(file, " has no MemTotal"));
  MemoryInfo info;
  info.total = kib[0] * kKibibyte;
  if (found[1]) {
    info.available = kib[1] * kKibibyte;
  } else if (found[2] && found[3] && found[4]) {
    info.available = (kib[2] + kib[3] + kib[4]) * kKibibyte;
  } else {
    return absl::NotFoundError(
        absl::StrCat(file, " has neither MemAvailable nor MemFree, Buffers and Cached"));
  }
  return info;
}

absl::StatusOr<MemoryInfo> ReadMemoryInfo(const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string text, ReadProcFile(path));
  return ParseMeminfo(text, path);
}

absl::StatusOr<NetCounters> ParseNetDev(absl::string_view text,
                                        const std::vector<std::string>& interfaces,
                                        absl::string_view file) {
  NetCounters counters;
  std::vector<std::string> seen;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    // "  eth0: <8 receive counters> <8 transmit counters>"; the two header lines have no ':'
    // (interface names cannot hold one).
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const std::string name(absl::StripAsciiWhitespace(line.substr(0, colon)));
    seen.push_back(name);
    const bool chosen = interfaces.empty() ? name != "lo"
                                           : std::find(interfaces.begin(), interfaces.end(),
                                                       name) != interfaces.end();
    if (!chosen) continue;
    std::vector<absl::string_view> words = Words(line.substr(colon + 1));
    words.insert(words.begin(), absl::StripLeadingAsciiWhitespace(line.substr(0, colon + 1)));
    COHORT_ASSIGN_OR_RETURN(std::vector<uint64_t> values,
                            Counters(words, 1, 16, file, line_number));
    counters.received_bytes += values[0];
    counters.sent_bytes += values[8];
  }
  for (const std::string& name : interfaces) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) {
      return absl::NotFoundError(absl::StrCat(file, " has no interface '", name, "' (it has ",
                                              absl::StrJoin(seen, ", "), ")"));
    }
  }
  return counters;
}

absl::StatusOr<NetCounters> ReadNetCounters(const std::vector<std::string>& interfaces,
                                            const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::string text, ReadProcFile(path));
  return ParseNetDev(text, interfaces, path);
}

absl::StatusOr<DiskCounters> ParseDiskstats(absl::string_view text, const DiskFilter& include,
                                            absl::string_view file) {
  DiskCounters counters;
  size_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    // "major minor name" and at least 11 counters: reads completed, reads merged, sectors
    // read, ms reading, writes completed, writes merged, sectors written, ... (Linux's
    // Documentation/admin-guide/iostats.rst).
    const std::vector<absl::string_view> words = Words(line);
    if (words.empty()) continue;
    if (words.size() < 3) return LineError(file, line_number, "expected 'major minor name ...'");
    if (!include(words[2])) continue;
    COHORT_ASSIGN_OR_RETURN(std::vector<uint64_t> values,
                            Counters(words, 3, 11, file, line_number));
    counters.reads += values[0];
    counters.read_bytes += values[2] * kSectorBytes;
    counters.writes += values[4];
    counters.written_bytes += values[6] * kSectorBytes;
  }
  return counters;
}

absl::StatusOr<std::vector<std::string>> ListPhysicalDisks(const std::string& sys_block) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::directory_iterator it(sys_block, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot list ", sys_block, ": ", error.message()));
  }
  std::vector<std::string> disks;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    std::error_code ignored;  // an entry that vanished meanwhile is simply not a disk
    if (fs::exists(it->path() / "device", ignored)) disks.push_back(it->path().filename());
  }
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot list ", sys_block, ": ", error.message()));
  }
  std::sort(disks.begin(), disks.end());
  return disks;
}

absl::StatusOr<DiskCounters> ReadDiskCounters(const std::string& path,
                                              const std::string& sys_block) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> disks, ListPhysicalDisks(sys_block));
  COHORT_ASSIGN_OR_RETURN(std::string text, ReadProcFile(path));
  return ParseDiskstats(
      text,
      [&disks](absl::string_view name) {
        return std::binary_search(disks.begin(), disks.end(), name);
      },
      path);
}

}  // namespace cohort::sampler
