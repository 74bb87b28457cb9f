#include "cli/remote_experiment.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/progress_meter.h"
#include "client/master_client.h"
#include "common/subprocess.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxContextBytes = 96u << 20;

// The context directory as tar.gz bytes (tar from Debian's base system).
absl::StatusOr<std::string> PackContext(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("context directory ", dir, " does not exist"));
  }
  const fs::path archive =
      fs::temp_directory_path() / absl::StrCat("cohort-context-", ::getpid(), ".tar.gz");
  auto tar = Subprocess::Start({.argv = {"tar", "czf", archive.string(), "-C", dir, "."}});
  if (!tar.ok()) return tar.status();
  std::string out;
  while ((*tar)->ReadAvailable(&out, absl::Milliseconds(200))) {
  }
  absl::StatusOr<int> status = (*tar)->Wait(absl::Minutes(5));
  if (!status.ok() || *status != 0) {
    fs::remove(archive, ec);
    return absl::InternalError(absl::StrCat("packing ", dir, " with tar failed: ", out));
  }
  std::ifstream in(archive, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  fs::remove(archive, ec);
  if (bytes.str().size() > kMaxContextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context directory ", dir, " packs to ", bytes.str().size() >> 20,
        " MB; the master takes at most 96 MB: move data out of it (trials can read it from a "
        "path in the config's `data` section)"));
  }
  return bytes.str();
}

// What --follow remembers of each trial between polls.
struct FollowedTrials {
  std::map<int64_t, std::unique_ptr<ProgressMeter>> meters;
  std::map<int64_t, std::string> last_state;
};

// Feeds trial `t` (the master's JSON) to its meter, prints "trial N: STATE" on stderr when its
// state changed since the last poll, and returns its progress line.
std::string TrackTrial(const Json& t, bool tty, FollowedTrials* followed) {
  const int64_t tid = t["id"].get<int64_t>();
  auto& meter = followed->meters[tid];
  if (!meter) meter = std::make_unique<ProgressMeter>(absl::StrCat("trial ", tid), 0);
  const std::string state = t["state"];
  if (t["total_batches"].get<int64_t>() > 0) {
    meter->Update({.completed = static_cast<double>(t["batches"].get<int64_t>()),
                   .total = static_cast<double>(t["total_batches"].get<int64_t>())},
                  absl::Now());
  }
  std::string line = meter->has_snapshot() ? meter->Line() : absl::StrCat("trial ", tid);
  absl::StrAppend(&line, "  ", state);
  if (t.contains("waiting_reason")) absl::StrAppend(&line, " (", Str(t["waiting_reason"]), ")");
  if (state != followed->last_state[tid]) {
    if (tty) std::cerr << "\r\x1b[K";
    std::cerr << "trial " << tid << ": " << state
              << (t.contains("waiting_reason") ? " (" + Str(t["waiting_reason"]) + ")" : "")
              << "\n";
    followed->last_state[tid] = state;
  }
  return line;
}

// Prints how experiment `e` ended and each failed trial's last lines; returns the exit code.
int FinishFollow(const Json& e, int64_t id, bool tty) {
  if (tty) std::cerr << "\n";
  const std::string state = e["state"];
  std::cout << "experiment " << id << " " << state << "\n";
  for (const Json& t : e["trials"]) {
    if (t.contains("error_lines")) {
      std::cout << "trial " << t["id"] << " failed; its last lines:\n"
                << Str(t["error_lines"]) << "\n";
    }
  }
  return state == "COMPLETED" ? kExitOk : kExitInvalid;
}

// Prints the trials' progress until the experiment ends; returns the exit code.
int Follow(const std::string& master_flag, int64_t id) {
  client::MasterClient client(client::MasterUrl(master_flag));
  FollowedTrials followed;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  absl::Time last_print = absl::InfinitePast();
  while (true) {
    absl::StatusOr<Json> e = client.Get(absl::StrCat("/api/v1/experiments/", id));
    if (!e.ok()) return Fail(e.status());
    std::vector<std::string> lines;
    for (const Json& t : (*e)["trials"]) lines.push_back(TrackTrial(t, tty, &followed));
    const std::string state = (*e)["state"];
    const bool done = state != "ACTIVE" && state != "PAUSED";
    if (tty) {
      std::cerr << "\r\x1b[K" << absl::StrJoin(lines, " | ") << std::flush;
    } else if (absl::Now() - last_print > absl::Seconds(10) || done) {
      for (const std::string& l : lines) std::cerr << l << "\n";
      last_print = absl::Now();
    }
    if (done) return FinishFollow(*e, id, tty);
    absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace

int RunCreateRemote(const std::string& master_flag, const std::string& config_path,
                    const std::string& context_dir, const std::string& template_name, bool follow) {
  std::ifstream in(config_path);
  if (!in) {
    std::cerr << "cohort: error: cannot read the config " << config_path << "\n";
    return kExitUsage;
  }
  std::stringstream config;
  config << in.rdbuf();
  absl::StatusOr<std::string> context = PackContext(context_dir);
  if (!context.ok()) {
    std::cerr << "cohort: error: " << context.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<client::FormPart> parts = {
      {"config", config.str(), "config.yaml", "application/yaml"},
      {"context", *context, "context.tar.gz", "application/gzip"}};
  if (!template_name.empty()) parts.push_back({"template", template_name, "", "text/plain"});
  client::MasterClient client(client::MasterUrl(master_flag), absl::Seconds(120));
  absl::StatusOr<Json> r = client.PostForm("/api/v1/experiments", parts);
  if (!r.ok()) {
    std::cerr << "cohort: error: " << config_path << ": " << r.status().message() << "\n";
    return kExitInvalid;
  }
  const int64_t id = (*r)["id"].get<int64_t>();
  std::cout << "created experiment " << id << "\n";
  if (!follow) return kExitOk;
  return Follow(master_flag, id);
}

}  // namespace cohort::cli
