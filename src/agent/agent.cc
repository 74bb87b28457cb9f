#include "agent/agent.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/leftovers.h"
#include "agent/undelivered.h"
#include "client/master_client.h"
#include "common/directory_lock.h"
#include "common/logging.h"
#include "common/sibling_program.h"
#include "wire/limits.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr absl::Duration kKillGrace = absl::Seconds(10);
// When the agent itself stops: its trials' SIGTERM to SIGKILL, short enough that it exits
// within 10 s whatever they do.
constexpr absl::Duration kShutdownGrace = absl::Seconds(5);
// How long each of the two posts that tell the master this agent leaves may take.
constexpr absl::Duration kLeaveTimeout = absl::Seconds(2);
constexpr absl::Duration kRetryEvery = absl::Seconds(1);        // registering, polling
constexpr absl::Duration kComplainEvery = absl::Seconds(30);    // while registering fails
constexpr absl::Duration kLeftoverTimeout = absl::Seconds(10);  // SIGKILLed leftovers to go

// Whether `id` can name an allocation in a URL path: the master's ids are "<trial>.<boot>.<n>".
bool IsAllocationId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
           c == '-' || c == '_';
  });
}

// What can be read of a start action that did not parse: its allocation, node_rank and
// allocation_token (all needed to report the node's exit) and its trial_id (0 when unreadable:
// then nothing goes to the trial's log). nullopt for anything else: a stop, no readable allocation
// or node.
std::optional<wire::StartAction> ReadableStart(const Json& raw) {
  if (!raw.is_object()) return std::nullopt;
  const auto type = raw.find("type");
  const auto allocation = raw.find("allocation");
  const auto node = raw.find("node_rank");
  if (type == raw.end() || *type != "start" || allocation == raw.end() ||
      !allocation->is_string() || node == raw.end() || !node->is_number_integer() ||
      node->get<int64_t>() < 0 || node->get<int64_t>() > (1 << 20)) {
    return std::nullopt;
  }
  wire::StartAction start;
  start.allocation = allocation->get<std::string>();
  if (!IsAllocationId(start.allocation)) return std::nullopt;
  start.node_rank = static_cast<int>(node->get<int64_t>());
  const auto trial = raw.find("trial_id");
  if (trial != raw.end() && trial->is_number_integer() && trial->get<int64_t>() > 0) {
    start.trial_id = trial->get<int64_t>();
  }
  const auto token = raw.find("allocation_token");
  if (token != raw.end() && token->is_string() &&
      token->get_ref<const std::string&>().size() <= 256) {
    start.allocation_token = token->get<std::string>();
  }
  return start;
}

}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock()),
      gpu_pool_(options_.gpus),
      shipper_({.master_url = options_.master_url,
                .agent_id = options_.id,
                .secret = options_.secret,
                .tls_ca_file = options_.tls_ca_file,
                .stop = &stop_}) {
  if (options_.launcher.empty()) options_.launcher = SiblingProgram("cohort-launch");
}

Agent::~Agent() {
  Stop();
  StopAndJoinAll();
}

void Agent::Stop() {
  if (stop_requested_.exchange(true)) return;
  stop_.Notify();
  // Requests on their way end now: behind a partition they would wait out their timeouts
  // (a long poll's 40 s, a post's 30 s); later ones wait at most 2 s (OutputShipperOptions).
  shipper_.Abort();
  MutexLock lock(&poll_mu_);
  if (poll_client_ != nullptr) poll_client_->Abort();
}

void Agent::Spawn(std::function<void()> work) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  threads_.push_back({done, std::thread([work = std::move(work), done] {
                        work();
                        done->store(true);
                      })});
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

void Agent::StopAndJoinAll() {
  {
    MutexLock lock(&mu_);
    if (!running_.empty()) {
      COHORT_LOG(INFO) << "agent " << options_.id << ": stopping " << running_.size()
                       << " allocation(s) (SIGTERM, SIGKILL after "
                       << absl::FormatDuration(kShutdownGrace) << ")";
    }
    for (auto& [id, control] : running_) control->Stop(wire::StopMode::kKill, kShutdownGrace);
  }
  for (Worker& w : threads_) {
    if (w.thread.joinable()) w.thread.join();
  }
  threads_.clear();
}

absl::Status Agent::Register() {
  client::MasterClient client(options_.master_url, absl::Seconds(10));
  client.set_bearer_token(options_.secret);
  client.set_tls_ca_file(options_.tls_ca_file);
  wire::AgentRegistration registration{options_.id,      options_.slots,   options_.host,
                                       options_.port_lo, options_.port_hi, {}};
  registration.resource_pool = options_.resource_pool;
  {
    MutexLock lock(&mu_);
    for (const auto& [id, control] : running_) {
      registration.running.push_back(id);
      registration.allocations.push_back(control->Claim());
    }
  }
  return client.Post("/api/v1/agents", registration.ToJson()).status();
}

absl::Status Agent::DeliverKept() {
  for (auto& [path, kept] : ListUndelivered(options_.work_dir)) {
    absl::Status delivered =
        kept.ok() ? DeliverUndelivered(options_.master_url, options_.tls_ca_file, *kept)
                  : kept.status();
    if (absl::IsUnavailable(delivered)) return delivered;  // the master is away: kept
    if (delivered.ok()) {
      COHORT_LOG(INFO) << "agent " << options_.id << ": delivered the exit (status " << kept->status
                       << ") of node " << kept->node << " of allocation " << kept->allocation
                       << " and " << kept->lines.size() << " log line(s) its previous run kept";
    } else {
      COHORT_LOG(WARNING) << "agent " << options_.id << ": dropping " << path
                          << ", kept by its previous run: " << delivered.message();
    }
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) {
      COHORT_LOG(ERROR) << "agent " << options_.id << ": removing " << path << ": " << ec.message()
                        << " (it would be delivered again)";
    }
  }
  return absl::OkStatus();
}

bool Agent::RegisterPatiently() {
  while (!stop_.HasBeenNotified()) {
    // What its previous run could not deliver goes first: the master ends those allocations
    // with it, before this registration would count their nodes as lost.
    absl::Status s = DeliverKept();
    if (s.ok()) s = Register();
    if (absl::IsUnauthenticated(s)) {
      refusal_ = absl::UnauthenticatedError(absl::StrCat(
          "the master at ", options_.master_url, " refused agent ", options_.id, ": ", s.message(),
          options_.secret.empty() ? " (this agent was given no secret)" : ""));
      return false;
    }
    if (client::IsTlsFailure(s)) {
      // The message says which CA or URL to pass (the marker is for code, not for people).
      refusal_ = absl::FailedPreconditionError(s.message());
      return false;
    }
    if (s.ok()) {
      last_registered_ = clock_.Now();
      COHORT_LOG(INFO) << "agent " << options_.id << ": registered " << options_.slots
                       << " slots with " << options_.master_url;
      return true;
    }
    if (clock_.Now() - last_complaint_ > kComplainEvery) {
      COHORT_LOG(WARNING) << "agent " << options_.id << ": " << s.message()
                          << " (retrying every second)";
      last_complaint_ = clock_.Now();
    }
    clock_.SleepFor(kRetryEvery, stop_);
  }
  return false;
}

absl::Status Agent::Run() {
  // The id names the agent in URLs and its default work directory: refused here, once, rather
  // than by the master on every try.
  if (absl::Status id = wire::CheckSafeName("agent id (--id)", options_.id); !id.ok()) return id;
  std::error_code ec;
  fs::create_directories(options_.work_dir, ec);
  if (!ec) options_.work_dir = fs::weakly_canonical(fs::absolute(options_.work_dir), ec).string();
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("work directory ", options_.work_dir, ": ", ec.message()));
  }
  absl::StatusOr<DirectoryLock> lock = DirectoryLock::Acquire(options_.work_dir, "cohort-agent",
                                                              "give each agent its own --work-dir");
  if (!lock.ok()) return lock.status();
  // Before it offers its slots: a trial its previous run left would hold their ports and cores.
  // One that does not die (stuck in the kernel) is reported, and the agent works on.
  absl::StatusOr<int> stopped = StopMarked(kWorkDirMarker, options_.work_dir, kLeftoverTimeout);
  if (!stopped.ok()) {
    COHORT_LOG(ERROR) << "agent " << options_.id << ": " << stopped.status().message();
  } else if (*stopped > 0) {
    COHORT_LOG(WARNING) << "agent " << options_.id << ": stopped " << *stopped
                        << " process(es) its previous run left behind";
  }
  bool registered = false, ever_registered = false;
  while (!stop_.HasBeenNotified()) {
    if (!registered && !RegisterPatiently()) break;
    registered = ever_registered = true;
    JoinFinished();
    registered = PollActions();
  }
  // Stopping cleanly: the master is told first, so it places nothing more here and queues the
  // trials stopped now again without counting a restart; then once they have exited, so it
  // drops this agent at once rather than after its timeout.
  if (ever_registered && refusal_.ok()) Leave("stopping");
  StopAndJoinAll();
  if (ever_registered && refusal_.ok()) Leave("stopped");
  COHORT_LOG(INFO) << "agent " << options_.id << ": stopped";
  return refusal_;
}

void Agent::Leave(const char* when) {
  client::MasterClient client(options_.master_url, kLeaveTimeout);
  client.set_bearer_token(options_.secret);
  client.set_tls_ca_file(options_.tls_ca_file);
  absl::StatusOr<Json> r = client.Post(absl::StrCat("/api/v1/agents/", options_.id, "/leave"));
  if (!r.ok()) {
    COHORT_LOG(WARNING) << "agent " << options_.id << ": telling the master it is " << when
                        << " failed (it will count this agent lost after its timeout): "
                        << r.status().message();
  } else if (r->value("gone", false)) {
    COHORT_LOG(INFO) << "agent " << options_.id << ": the master has let this agent go";
  }
}

bool Agent::PollActions() {
  // The read timeout leaves the master's long poll time to answer.
  client::MasterClient client(options_.master_url, options_.poll_wait + absl::Seconds(35));
  client.set_bearer_token(options_.secret);
  client.set_tls_ca_file(options_.tls_ca_file);
  {
    MutexLock lock(&poll_mu_);
    if (stop_.HasBeenNotified()) return false;
    poll_client_ = &client;  // Stop() aborts the poll
  }
  absl::StatusOr<Json> r =
      client.Get(absl::StrCat("/api/v1/agents/", options_.id,
                              "/actions?timeout=", absl::ToDoubleSeconds(options_.poll_wait)));
  {
    MutexLock lock(&poll_mu_);
    poll_client_ = nullptr;
  }
  if (!r.ok()) {
    // Not found: the master restarted and forgot this agent: register again at once. Anything
    // else (unreachable, an error), or forgotten again within a second of registering: a
    // second later, so no answer of the master's makes a hot loop.
    if (!absl::IsNotFound(r.status()) || clock_.Now() - last_registered_ < kRetryEvery) {
      clock_.SleepFor(kRetryEvery, stop_);
    }
    return false;
  }
  absl::StatusOr<std::vector<absl::StatusOr<wire::Action>>> actions = wire::ParseActionBatch(*r);
  if (!actions.ok()) {
    COHORT_LOG(WARNING) << "agent " << options_.id
                        << ": ignoring the master's answer to a poll: " << actions.status();
    return true;
  }
  // ParseActionBatch parsed (*r)["actions"] one by one, in order.
  const Json& raw = (*r)["actions"];
  for (size_t i = 0; i < actions->size(); ++i) Carry(raw[i], std::move((*actions)[i]));
  return true;
}

void Agent::Carry(const Json& raw, absl::StatusOr<wire::Action> action) {
  if (!action.ok()) {
    RefuseStart(raw, action.status());
  } else if (auto* start = std::get_if<wire::StartAction>(&*action)) {
    Start(std::move(*start));
  } else {
    StopAllocation(std::get<wire::StopAction>(*action));
  }
}

void Agent::RefuseStart(const Json& raw, const absl::Status& why) {
  std::optional<wire::StartAction> start = ReadableStart(raw);
  if (!start) {
    // Nothing names a node to report on: the master gives up on it when it loses this agent
    // or the allocation is stopped.
    COHORT_LOG(ERROR) << "agent " << options_.id
                      << ": skipping a malformed action: " << why.message();
    return;
  }
  const std::string reason =
      absl::StrCat("cannot start node ", start->node_rank, " of allocation ", start->allocation,
                   ": ", why.message(), " (reported as exit status 1)");
  COHORT_LOG(ERROR) << "agent " << options_.id << ": " << reason;
  auto control = std::make_shared<AllocationControl>(clock_);
  Spawn([this, control, start = *std::move(start), reason] {
    AllocationRun(RunOptions(), start, control).Fail(reason);
  });
}

AllocationRunOptions Agent::RunOptions(std::vector<int> gpus) {
  // The agent's slots share its machine: each worker gets cores / slots compute threads.
  const unsigned cpus = options_.cpus > 0 ? static_cast<unsigned>(options_.cpus)
                                          : std::thread::hardware_concurrency();
  AllocationRunOptions run_options;
  run_options.master_url = options_.master_url;
  run_options.secret = options_.secret;
  run_options.tls_ca_file = options_.tls_ca_file;
  run_options.agent_id = options_.id;
  run_options.launcher = options_.launcher;
  run_options.work_dir = options_.work_dir;
  run_options.threads_per_worker =
      static_cast<int>(std::max(1u, cpus / static_cast<unsigned>(std::max(1, options_.slots))));
  run_options.gpus = std::move(gpus);
  run_options.kill_grace = kKillGrace;
  run_options.clock = &clock_;
  run_options.stop = &stop_;
  run_options.shipper = &shipper_;
  // Stable for an agent, different between agents: their flushes do not all reach the master
  // at the same moment.
  run_options.flush_phase = absl::Milliseconds(std::hash<std::string>{}(options_.id) % 500);
  run_options.progress_deadline = options_.progress_deadline;
  return run_options;
}

void Agent::Start(wire::StartAction action) {
  auto control = std::make_shared<AllocationControl>(clock_);
  control->Describe({.allocation = action.allocation,
                     .trial_id = action.trial_id,
                     .node_rank = action.node_rank,
                     .slots = action.slots});
  {
    MutexLock lock(&mu_);
    running_[action.allocation] = control;
  }
  Spawn([this, control, action = std::move(action)] { RunAllocation(control, action); });
}

void Agent::StopAllocation(const wire::StopAction& action) {
  std::shared_ptr<AllocationControl> control;
  {
    MutexLock lock(&mu_);
    auto it = running_.find(action.allocation);
    if (it == running_.end()) return;
    control = it->second;
  }
  control->Stop(action.mode, kKillGrace);
}

void Agent::RunAllocation(std::shared_ptr<AllocationControl> control, wire::StartAction action) {
  const std::string id = action.allocation;
  absl::StatusOr<std::vector<int>> gpus = gpu_pool_.Take(id, action.slots);
  if (gpus.ok()) {
    AllocationRunOptions run_options = RunOptions(*std::move(gpus));
    run_options.on_launcher_exit = [this, id] { gpu_pool_.Release(id); };
    AllocationRun(std::move(run_options), std::move(action), std::move(control)).Run();
  } else {
    COHORT_LOG(ERROR) << "agent " << options_.id << ": " << gpus.status().message();
    AllocationRun(RunOptions(), std::move(action), std::move(control))
        .Fail(absl::StrCat("agent ", options_.id, ": ", gpus.status().message()));
  }
  gpu_pool_.Release(id);
  {
    MutexLock lock(&mu_);
    running_.erase(id);
  }
  PruneWorkDir();
}

void Agent::PruneWorkDir() {
  MutexLock lock(&prune_mu_);
  std::vector<std::pair<fs::file_time_type, fs::path>> finished;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.work_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("alloc-", 0) != 0) continue;
    {
      MutexLock running_lock(&mu_);
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
