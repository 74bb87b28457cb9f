#include "agent/agent.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/master_client.h"
#include "common/json_lines_tail.h"
#include "common/logging.h"
#include "common/sibling_program.h"
#include "common/subprocess.h"
#include "config/config_parser.h"
#include "config/entrypoint.h"
#include "config/yaml_json.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr size_t kLogBatch = 500;
constexpr absl::Duration kFlushEvery = absl::Milliseconds(500);
constexpr absl::Duration kKillGrace = absl::Seconds(10);

// "[rank=3] text" -> (3, "text"); other lines (the launcher's own) -> (-1, line).
std::pair<int, std::string> SplitRank(const std::string& line) {
  if (line.rfind("[rank=", 0) == 0) {
    const size_t close = line.find("] ");
    int rank = -1;
    if (close != std::string::npos && absl::SimpleAtoi(line.substr(6, close - 6), &rank)) {
      return {rank, line.substr(close + 2)};
    }
  }
  return {-1, line};
}

// Posts until the master takes it (it may be restarting), or gives up after `patience`.
absl::StatusOr<Json> PostPatiently(client::MasterClient& client, const std::string& path,
                                   const Json& body, absl::Duration patience) {
  const absl::Time deadline = absl::Now() + patience;
  while (true) {
    absl::StatusOr<Json> r = client.Post(path, body);
    if (r.ok() || !absl::IsUnavailable(r.status()) || absl::Now() >= deadline) return r;
    absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace

struct Agent::Running {
  std::string allocation;
  std::mutex mu;
  Subprocess* child = nullptr;  // while the launcher runs
  std::string stop_mode;        // "", "preempt", "kill"
  absl::Time kill_at = absl::InfiniteFuture();
};

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
  Json running = Json::array();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, r] : running_) running.push_back(id);
  }
  return client
      .Post("/api/v1/agents", {{"id", options_.id},
                               {"slots", options_.slots},
                               {"host", options_.host},
                               {"port_range", {options_.port_lo, options_.port_hi}},
                               {"running", running}})
      .status();
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
    client::MasterClient client(options_.master_url, absl::Seconds(40));
    absl::StatusOr<Json> r =
        client.Get(absl::StrCat("/api/v1/agents/", options_.id, "/actions?timeout=5"));
    if (!r.ok()) {
      registered = false;  // not found: the master restarted; unreachable: retry
      if (absl::IsUnavailable(r.status())) absl::SleepFor(absl::Seconds(1));
      continue;
    }
    for (const Json& action : (*r)["actions"]) {
      const std::string type = action.value("type", "");
      if (type == "start")
        Start(action);
      else if (type == "stop")
        StopAllocation(action.value("allocation", ""), action.value("mode", "preempt"));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, r] : running_) {
    std::lock_guard<std::mutex> rl(r->mu);
    if (r->child != nullptr) r->child->Signal(SIGTERM);
  }
  return absl::OkStatus();
}

void Agent::Start(const Json& action) {
  auto running = std::make_shared<Running>();
  running->allocation = action.value("allocation", "");
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_[running->allocation] = running;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  threads_.push_back({done, std::thread([this, running, action, done] {
                        RunAllocation(running, action);
                        done->store(true);
                      })});
}

void Agent::StopAllocation(const std::string& allocation, const std::string& mode) {
  std::shared_ptr<Running> running;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = running_.find(allocation);
    if (it == running_.end()) return;
    running = it->second;
  }
  std::lock_guard<std::mutex> lock(running->mu);
  running->stop_mode = mode;
  if (mode == "kill") running->kill_at = absl::Now() + kKillGrace;
  if (running->child != nullptr) running->child->Signal(SIGTERM);
}

void Agent::RunAllocation(std::shared_ptr<Running> running, Json action) {
  const std::string id = running->allocation;
  const int64_t trial_id = action.value("trial_id", int64_t{0});
  const int node = action.value("node_rank", 0);
  client::MasterClient client(options_.master_url, absl::Seconds(30));
  std::vector<Json> pending_logs;
  auto log = [&](int rank, const std::string& line) {
    pending_logs.push_back({{"rank", rank}, {"line", line}});
  };
  bool master_forgot = false;
  auto flush_logs = [&] {
    if (pending_logs.empty()) return;
    absl::StatusOr<Json> r =
        PostPatiently(client, absl::StrCat("/api/v1/allocations/", id, "/logs"),
                      {{"trial_id", trial_id}, {"lines", pending_logs}}, absl::Minutes(10));
    if (absl::IsNotFound(r.status())) master_forgot = true;  // the lines were stored anyway
    pending_logs.clear();
  };
  int status = 1;
  const fs::path dir = fs::path(options_.work_dir) / absl::StrCat("alloc-", id);
  [&] {
    std::error_code ec;
    fs::create_directories(dir / "context", ec);
    fs::create_directories(dir / "run", ec);
    absl::StatusOr<std::string> archive = client.GetBytes(action.value("context", ""));
    if (!archive.ok()) {
      log(-1, absl::StrCat("agent ", options_.id,
                           ": downloading the context: ", archive.status().message()));
      return;
    }
    std::ofstream(dir / "context.tar.gz", std::ios::binary) << *archive;
    if (!archive->empty()) {
      auto tar = Subprocess::Start({.argv = {"tar", "xzf", (dir / "context.tar.gz").string(), "-C",
                                             (dir / "context").string()}});
      std::string out;
      if (tar.ok()) {
        while ((*tar)->ReadAvailable(&out, absl::Milliseconds(200))) {
        }
      }
      absl::StatusOr<int> tar_status = tar.ok() ? (*tar)->Wait(absl::Minutes(5)) : tar.status();
      if (!tar_status.ok() || *tar_status != 0) {
        log(-1, absl::StrCat("agent ", options_.id, ": unpacking the context failed: ", out));
        return;
      }
    }
    const std::string config_text = action.value("config", "");
    std::ofstream(dir / "config.yaml") << config_text;
    absl::StatusOr<config::Json> tree = config::ParseYaml(config_text);
    absl::StatusOr<config::ExperimentConfig> cfg =
        tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
    if (!cfg.ok()) {
      log(-1,
          absl::StrCat("agent ", options_.id, ": the experiment config: ", cfg.status().message()));
      return;
    }
    absl::StatusOr<std::vector<std::string>> entry =
        config::ResolveEntrypoint(cfg->entrypoint, (dir / "context").string());
    if (!entry.ok()) {
      log(-1, absl::StrCat("agent ", options_.id, ": ", entry.status().message()));
      return;
    }
    std::vector<std::string> argv = {options_.launcher,
                                     "--slots",
                                     std::to_string(action.value("slots", 1)),
                                     "--nnodes",
                                     std::to_string(action.value("nnodes", 1)),
                                     "--node-rank",
                                     std::to_string(node),
                                     "--chief-addr",
                                     action.value("chief_addr", "127.0.0.1:29500"),
                                     "--grace-period",
                                     "60",
                                     "--"};
    argv.insert(argv.end(), entry->begin(), entry->end());
    std::map<std::string, std::optional<std::string>> env;
    for (const auto& [k, v] : cfg->environment_variables) env[k] = v;
    env["COHORT_CONFIG"] = fs::absolute(dir / "config.yaml").string();
    env["COHORT_RUN_DIR"] = fs::absolute(dir / "run").string();
    env["COHORT_HPARAMS"] = action.value("hparams", "{}");
    env["COHORT_TRIAL_SEED"] = std::to_string(action.value("seed", int64_t{0}));
    env["COHORT_TRIAL_ID"] = std::to_string(trial_id);
    // adaptive_asha: the trial's searcher operations (its bracket's rungs).
    if (action.contains("searcher_ops") && action["searcher_ops"].is_array() &&
        !action["searcher_ops"].empty()) {
      std::vector<std::string> ops;
      for (const Json& op : action["searcher_ops"])
        ops.push_back(std::to_string(op.get<int64_t>()));
      env["COHORT_SEARCHER_OPS"] = absl::StrJoin(ops, ",");
    }
    env["COHORT_MASTER_URL"] = options_.master_url;
    // The agent's slots share its machine: each worker gets cores / slots compute threads
    // (cohort-launch would divide by this node's share only, oversubscribing the cores when
    // several trials run on one agent). A value set in the agent's environment wins.
    const unsigned cpus = options_.cpus > 0 ? static_cast<unsigned>(options_.cpus)
                                            : std::thread::hardware_concurrency();
    const std::string threads =
        std::to_string(std::max(1u, cpus / static_cast<unsigned>(std::max(1, options_.slots))));
    for (const char* var :
         {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "COHORT_NUM_THREADS"}) {
      if (std::getenv(var) == nullptr && !env.count(var)) env[var] = threads;
    }
    const std::string latest = action.value("latest_checkpoint", "");
    env["COHORT_LATEST_CHECKPOINT"] = latest.empty() ? std::nullopt : std::optional(latest);
    absl::StatusOr<std::unique_ptr<Subprocess>> child =
        Subprocess::Start({.argv = argv, .env = env, .cwd = (dir / "context").string()});
    if (!child.ok()) {
      log(-1, absl::StrCat("agent ", options_.id, ": ", child.status().message()));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(running->mu);
      running->child = child->get();
      if (!running->stop_mode.empty()) (*child)->Signal(SIGTERM);  // stopped before it started
    }
    const bool reports = action.value("reports", false);
    JsonLinesTail metrics((dir / "run" / "metrics.jsonl").string());
    std::string partial;
    absl::Time last_flush = absl::Now();
    auto post_reports = [&] {
      if (!reports) return;
      std::vector<Json> lines = metrics.NewLines();
      Json body = {{"trial_id", trial_id}, {"lines", lines}};
      std::ifstream progress(dir / "run" / "progress.json");
      Json p = Json::parse(progress, nullptr, false);
      if (p.is_object()) body["progress"] = p;
      if (lines.empty() && !p.is_object()) return;
      (void)PostPatiently(client, absl::StrCat("/api/v1/allocations/", id, "/reports"), body,
                          absl::Minutes(10));
    };
    bool open = true;
    while (true) {
      std::string chunk;
      if (open) open = (*child)->ReadAvailable(&chunk, absl::Milliseconds(200));
      partial += chunk;
      for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
        auto [rank, text] = SplitRank(partial.substr(0, nl));
        log(rank, text);
        partial.erase(0, nl + 1);
      }
      const std::optional<int> exited = (*child)->Poll();
      if (pending_logs.size() >= kLogBatch || absl::Now() - last_flush >= kFlushEvery ||
          (exited && !open)) {
        flush_logs();
        post_reports();
        last_flush = absl::Now();
        if (master_forgot) {
          std::lock_guard<std::mutex> lock(running->mu);
          if (running->stop_mode.empty()) {
            running->stop_mode = "preempt";
            (*child)->Signal(SIGTERM);
          }
        }
      }
      {
        std::lock_guard<std::mutex> lock(running->mu);
        if (absl::Now() >= running->kill_at) (*child)->Signal(SIGKILL);
      }
      if (exited && !open) {
        status = *exited;
        break;
      }
      if (!open) absl::SleepFor(absl::Milliseconds(50));
    }
    if (!partial.empty()) log(SplitRank(partial).first, SplitRank(partial).second);
    std::lock_guard<std::mutex> lock(running->mu);
    running->child = nullptr;
  }();
  flush_logs();
  (void)PostPatiently(client, absl::StrCat("/api/v1/allocations/", id, "/exit"),
                      {{"node", node}, {"status", status}}, absl::Minutes(10));
  // The master keeps the archive. The unpacked context stays: the trial ran inside it and may
  // have written outputs there, which are the user's.
  std::error_code ec;
  fs::remove(dir / "context.tar.gz", ec);
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
