#include "agent/leftovers.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/logging.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Whether process `pid` carries `entry` ("NAME=VALUE") in its environment.
bool Carries(pid_t pid, const std::string& entry) {
  const std::string environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  for (size_t at = 0; at < environ.size();) {
    const size_t end = std::min(environ.find('\0', at), environ.size());
    if (environ.compare(at, end - at, entry) == 0) return true;
    at = end + 1;
  }
  return false;
}

// Whether `pid` is a zombie (dead, not yet reaped) or gone.
bool Gone(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z';
}

// This user's live processes carrying `entry`, this one excluded.
std::vector<pid_t> Carriers(const std::string& entry) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(dir.path().filename().string(), &pid) || pid == ::getpid()) continue;
    if (Carries(pid, entry) && !Gone(pid)) pids.push_back(pid);
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
  return Carries(pid, absl::StrCat(marker, "=", value));
}

absl::StatusOr<int> StopMarked(const std::string& marker, const std::string& value,
                               absl::Duration timeout) {
  const std::string entry = absl::StrCat(marker, "=", value);
  std::vector<pid_t> pids = Carriers(entry);
  int stopped = 0;
  for (pid_t pid : pids) {
    const std::string command = CommandLine(pid);
    // Checked again just before the signal: the pid may have been reused since the scan.
    if (!Carries(pid, entry) || ::kill(pid, SIGKILL) != 0) continue;
    ++stopped;
    COHORT_LOG(WARNING) << "stopped pid " << pid << " (" << command << "), left running with "
                        << entry;
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (!(pids = Carriers(entry)).empty()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("processes marked ", entry, " still run ", absl::FormatDuration(timeout),
                       " after SIGKILL: pids ", absl::StrJoin(pids, ", ")));
    }
    for (pid_t pid : pids) {
      if (Carries(pid, entry)) ::kill(pid, SIGKILL);  // started since the first scan
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return stopped;
}

}  // namespace cohort::agent
