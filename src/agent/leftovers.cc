#include "agent/leftovers.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/logging.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The value of `name` in process `pid`'s environment ("" when absent or unreadable).
std::string EnvironmentValue(pid_t pid, const std::string& name) {
  const std::string environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  const std::string prefix = name + "=";
  for (size_t at = 0; at < environ.size();) {
    const size_t end = std::min(environ.find('\0', at), environ.size());
    if (environ.compare(at, prefix.size(), prefix) == 0) {
      return environ.substr(at + prefix.size(), end - at - prefix.size());
    }
    at = end + 1;
  }
  return "";
}

// Whether process `pid` carries `marker`=`value` in its environment.
bool Carries(pid_t pid, const std::string& marker, const std::string& value) {
  return !value.empty() && EnvironmentValue(pid, marker) == value;
}

// Whether `pid` is a zombie (dead, not yet reaped) or gone.
bool Gone(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z';
}

// Process `pid`'s start time (clock ticks since boot, field 22 of /proc/PID/stat); "" when gone.
std::string StartTime(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  // Fields after the command: state is field 3, the start time field 22.
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ', absl::SkipEmpty());
  return fields.size() > 19 ? std::string(fields[19]) : "";
}

// Whether `pid` belongs to another agent that is still alive (kOwnerMarker).
bool OwnedByAnotherLiveAgent(pid_t pid) {
  const std::string owner = EnvironmentValue(pid, kOwnerMarker);
  return !owner.empty() && owner != OwnerTag() && OwnerAlive(owner);
}

// This user's live processes carrying `marker`=`value`, this one excluded.
std::vector<pid_t> Carriers(const std::string& marker, const std::string& value) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(dir.path().filename().string(), &pid) || pid == ::getpid()) continue;
    if (Carries(pid, marker, value) && !Gone(pid)) pids.push_back(pid);
  }
  return pids;
}

std::string CommandLine(pid_t pid) {
  std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  for (char& c : cmdline) {
    if (c == '\0') c = ' ';
  }
  if (cmdline.size() > 200) cmdline = cmdline.substr(0, 200) + "...";
  while (!cmdline.empty() && cmdline.back() == ' ') cmdline.pop_back();
  return cmdline;
}

}  // namespace

bool CarriesMarker(int pid, const std::string& marker, const std::string& value) {
  return Carries(pid, marker, value);
}

std::string OwnerTagOf(int pid) { return absl::StrCat(pid, ":", StartTime(pid)); }

std::string OwnerTag() {
  static const std::string tag = OwnerTagOf(::getpid());
  return tag;
}

bool OwnerAlive(const std::string& tag) {
  const size_t colon = tag.find(':');
  pid_t pid = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(tag.substr(0, colon), &pid) || pid <= 0) {
    return false;
  }
  return !Gone(pid) && StartTime(pid) == tag.substr(colon + 1);
}

absl::StatusOr<int> StopMarked(const std::string& marker, const std::string& value,
                               absl::Duration timeout) {
  const std::string entry = absl::StrCat(marker, "=", value);
  std::vector<pid_t> pids = Carriers(marker, value);
  std::set<pid_t> spared;  // another live agent's: never a leftover
  int stopped = 0;
  for (pid_t pid : pids) {
    const std::string command = CommandLine(pid);
    if (OwnedByAnotherLiveAgent(pid)) {
      spared.insert(pid);
      COHORT_LOG(WARNING) << "left pid " << pid << " (" << command << ") alone: it carries "
                          << entry << " but its agent ("
                          << EnvironmentValue(pid, kOwnerMarker) << ") still runs";
      continue;
    }
    // Checked again just before the signal: the pid may have been reused since the scan.
    if (!Carries(pid, marker, value) || ::kill(pid, SIGKILL) != 0) continue;
    ++stopped;
    COHORT_LOG(WARNING) << "stopped pid " << pid << " (" << command << "), left running with "
                        << entry;
  }
  const absl::Time deadline = absl::Now() + timeout;
  const auto leftovers = [&] {
    std::vector<pid_t> left = Carriers(marker, value);
    left.erase(std::remove_if(left.begin(), left.end(),
                              [&](pid_t pid) { return spared.count(pid) > 0; }),
               left.end());
    return left;
  };
  while (!(pids = leftovers()).empty()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("processes marked ", entry, " still run ", absl::FormatDuration(timeout),
                       " after SIGKILL: pids ", absl::StrJoin(pids, ", ")));
    }
    for (pid_t pid : pids) {  // started since the first scan
      if (OwnedByAnotherLiveAgent(pid)) {
        spared.insert(pid);
      } else if (Carries(pid, marker, value)) {
        ::kill(pid, SIGKILL);
      }
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return stopped;
}

}  // namespace cohort::agent
