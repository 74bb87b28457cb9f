#include "agent/agent.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/master_client.h"
#include "common/logging.h"
#include "common/sibling_program.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr absl::Duration kKillGrace = absl::Seconds(10);

}  // namespace

Agent::Agent(AgentOptions options) : options_(std::move(options)) {
  if (options_.launcher.empty()) options_.launcher = SiblingProgram("cohort-launch");
}

Agent::~Agent() {
  Stop();
  for (Worker& w : threads_) {
    if (w.thread.joinable()) w.thread.join();
  }
}

void Agent::JoinFinished() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

void Agent::Stop() { stop_ = true; }

absl::Status Agent::Register() {
  client::MasterClient client(options_.master_url, absl::Seconds(10));
  wire::AgentRegistration registration{options_.id,      options_.slots,   options_.host,
                                       options_.port_lo, options_.port_hi, {}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, control] : running_) registration.running.push_back(id);
  }
  return client.Post("/api/v1/agents", registration.ToJson()).status();
}

absl::Status Agent::Run() {
  std::error_code ec;
  fs::create_directories(options_.work_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("work directory ", options_.work_dir, ": ", ec.message()));
  }
  bool registered = false;
  absl::Time last_complaint = absl::InfinitePast();
  while (!stop_) {
    if (!registered) {
      absl::Status s = Register();
      if (!s.ok()) {
        if (absl::Now() - last_complaint > absl::Seconds(30)) {
          COHORT_LOG(WARNING) << "agent " << options_.id << ": " << s.message()
                              << " (retrying every second)";
          last_complaint = absl::Now();
        }
        absl::SleepFor(absl::Seconds(1));
        continue;
      }
      COHORT_LOG(INFO) << "agent " << options_.id << ": registered " << options_.slots
                       << " slots with " << options_.master_url;
      registered = true;
    }
    JoinFinished();
    registered = PollActions();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, control] : running_) control->Stop(wire::StopMode::kPreempt, kKillGrace);
  return absl::OkStatus();
}

bool Agent::PollActions() {
  client::MasterClient client(options_.master_url, absl::Seconds(40));
  absl::StatusOr<Json> r =
      client.Get(absl::StrCat("/api/v1/agents/", options_.id, "/actions?timeout=5"));
  if (!r.ok()) {
    // Not found: the master restarted and forgot this agent; unreachable: retry.
    if (absl::IsUnavailable(r.status())) absl::SleepFor(absl::Seconds(1));
    return false;
  }
  absl::StatusOr<std::vector<absl::StatusOr<wire::Action>>> actions = wire::ParseActionBatch(*r);
  if (!actions.ok()) {
    COHORT_LOG(WARNING) << "agent " << options_.id
                        << ": ignoring the master's answer to a poll: " << actions.status();
    return true;
  }
  for (absl::StatusOr<wire::Action>& action : *actions) {
    if (!action.ok()) {
      // Nothing of it runs here; the master sees the node never report and gives up on it
      // when it loses this agent or the allocation is stopped.
      COHORT_LOG(ERROR) << "agent " << options_.id
                        << ": skipping a malformed action: " << action.status();
    } else if (auto* start = std::get_if<wire::StartAction>(&*action)) {
      Start(std::move(*start));
    } else {
      StopAllocation(std::get<wire::StopAction>(*action));
    }
  }
  return true;
}

void Agent::Start(wire::StartAction action) {
  auto control = std::make_shared<AllocationControl>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_[action.allocation] = control;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  threads_.push_back({done, std::thread([this, control, action = std::move(action), done] {
                        RunAllocation(control, action);
                        done->store(true);
                      })});
}

void Agent::StopAllocation(const wire::StopAction& action) {
  std::shared_ptr<AllocationControl> control;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = running_.find(action.allocation);
    if (it == running_.end()) return;
    control = it->second;
  }
  control->Stop(action.mode, kKillGrace);
}

void Agent::RunAllocation(std::shared_ptr<AllocationControl> control, wire::StartAction action) {
  // The agent's slots share its machine: each worker gets cores / slots compute threads.
  const unsigned cpus = options_.cpus > 0 ? static_cast<unsigned>(options_.cpus)
                                          : std::thread::hardware_concurrency();
  AllocationRunOptions run_options;
  run_options.master_url = options_.master_url;
  run_options.agent_id = options_.id;
  run_options.launcher = options_.launcher;
  run_options.work_dir = options_.work_dir;
  run_options.threads_per_worker =
      static_cast<int>(std::max(1u, cpus / static_cast<unsigned>(std::max(1, options_.slots))));
  run_options.kill_grace = kKillGrace;
  const std::string id = action.allocation;
  AllocationRun(std::move(run_options), std::move(action), std::move(control)).Run();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(id);
  }
  PruneWorkDir();
}

void Agent::PruneWorkDir() {
  std::lock_guard<std::mutex> lock(prune_mu_);
  std::vector<std::pair<fs::file_time_type, fs::path>> finished;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.work_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("alloc-", 0) != 0) continue;
    {
      std::lock_guard<std::mutex> running_lock(mu_);
      if (running_.count(name.substr(6))) continue;
    }
    finished.emplace_back(fs::last_write_time(entry.path(), ec), entry.path());
  }
  if (static_cast<int>(finished.size()) <= options_.keep_allocations) return;
  std::sort(finished.begin(), finished.end());
  const size_t remove = finished.size() - static_cast<size_t>(options_.keep_allocations);
  for (size_t i = 0; i < remove; ++i) {
    fs::remove_all(finished[i].second, ec);
    COHORT_LOG(INFO) << "removed " << finished[i].second.string() << " (keeping the last "
                     << options_.keep_allocations << " finished allocations)"
                     << (ec ? ": " + ec.message() : "");
  }
}

}  // namespace cohort::agent
