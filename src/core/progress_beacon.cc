#include "core/progress_beacon.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace cohort::core {

namespace fs = std::filesystem;

ProgressBeacon::ProgressBeacon(std::string run_dir, int rank)
    : path_((fs::path(run_dir) / wire::ProgressBeatPath(rank)).string()),
      tmp_(path_ + ".tmp") {
  beat_.rank = rank;
  beat_.pid = static_cast<int>(::getpid());
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  MutexLock lock(&mu_);
  BeatLocked("started", true);
}

void ProgressBeacon::Step(int64_t batch) {
  MutexLock lock(&mu_);
  beat_.batch = batch;
  BeatLocked("step", false);
}

void ProgressBeacon::EnterCollective(const char* name) {
  MutexLock lock(&mu_);
  BeatLocked(absl::StrCat("in ", name, " #", ++collectives_), true);
}

void ProgressBeacon::LeaveCollective(const char* name) {
  MutexLock lock(&mu_);
  BeatLocked(absl::StrCat("after ", name, " #", collectives_), false);
}

void ProgressBeacon::BeatLocked(std::string phase, bool important) {
  const absl::Time now = absl::Now();
  beat_.phase = std::move(phase);
  beat_.time = static_cast<double>(absl::ToUnixMicros(now)) / 1e6;
  // Steps and returns from collectives are thinned; entering a collective is always written,
  // so a rank blocked there names it.
  if (!important && now - last_write_ < kMinInterval) return;
  last_write_ = now;
  {
    std::ofstream out(tmp_, std::ios::trunc);
    out << beat_.ToJson().dump() << "\n";
  }
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec && !warned_) {
    warned_ = true;
    std::fprintf(stderr, "cohort: rank %d: cannot write its progress beat %s: %s\n", beat_.rank,
                 path_.c_str(), ec.message().c_str());
  }
}

}  // namespace cohort::core
