#include "agent/allocation_run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/leftovers.h"
#include "agent/retry.h"
#include "agent/undelivered.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/json_bounded.h"
#include "common/line_splitter.h"
#include "common/logging.h"
#include "common/net.h"
#include "common/private_file.h"
#include "common/small_file.h"
#include "config/config_parser.h"
#include "config/entrypoint.h"
#include "config/yaml_json.h"
#include "sampler/proc_counter_source.h"
#include "wire/launch_env.h"
#include "wire/limits.h"
#include "wire/progress_beat.h"
#include "wire/worker_env.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr size_t kLogBatch = 500;  // lines per post (wire::kMaxLogBatchLines at most)
// Bytes of JSON per log post: well below the master's body limit (wire::kMaxJsonBodyBytes),
// whatever the lines hold. A line's JSON can be 6 times its bytes (a NUL is "\u0000"), so 500
// lines of kMaxLogLineBytes could be 48 MiB: the master would refuse (413) the whole batch.
constexpr size_t kLogBatchBytes = 4u << 20;
// The same bound for each part of a report post (records, step profiles).
constexpr size_t kBatchBytes = kLogBatchBytes;
// metrics.jsonl records read per flush: a trial that floods its metrics file is read at this
// pace, never all at once.
constexpr size_t kRecordsPerFlush = 10 * wire::kMaxReportBatchLines;
static_assert(kLogBatchBytes + 6 * wire::kMaxLogLineBytes < wire::kMaxJsonBodyBytes / 2);
// Output read from the launcher per look: a flood waits in the pipe (the trial blocks on its
// writes) instead of in the agent's memory.
constexpr size_t kReadBytes = 256u << 10;
// Room for LineSplitter's marker within wire::kMaxLogLineBytes.
constexpr size_t kLineBytes = wire::kMaxLogLineBytes - 64;
constexpr absl::Duration kFlushEvery = absl::Milliseconds(500);
// A post's timeout on the allocation's own routes (RequestTimeout: shorter once stopping).
constexpr absl::Duration kPostTimeout = absl::Seconds(30);
// About what an exit item's JSON takes (its size only bounds how many share a post).
constexpr size_t kExitItemBytes = 64;
// The longest a look at the launcher's output waits for something to arrive.
constexpr absl::Duration kReadWait = absl::Milliseconds(200);
// While the master is unreachable (a post failed Unavailable), the reading loop does not wait
// for it: it tries again after a back-off (1 s, doubling up to 8 s) and meanwhile keeps at most
// this much: output lines beyond it are dropped and counted, the oldest report batches beyond
// it dropped with a warning.
constexpr size_t kMaxPendingBytes = 32u << 20;
constexpr absl::Duration kAwayFirstRetry = absl::Seconds(1);
constexpr absl::Duration kAwayMaxRetry = absl::Seconds(8);
// How long the launcher's output may stay open after it exited (held by a process it left).
constexpr absl::Duration kOutputAfterExit = absl::Seconds(3);
// How long node 0 of a multi-node allocation waits for its rendezvous port while an earlier
// allocation of this agent holds it: that one's launcher has a 60 s grace to stop its workers.
constexpr absl::Duration kChiefPortWait = absl::Seconds(75);

// Bytes `line` takes in a LogBatch's JSON.
size_t JsonBytes(const wire::LogLine& line) {
  return Json(line.line).dump(-1, ' ', false, Json::error_handler_t::replace).size() + 24;
}

// `items` cut into consecutive [begin, end) ranges of at most `max_count` items and at most
// `max_bytes` of JSON (`bytes(item)`), each at least one item.
template <typename T, typename BytesFn>
std::vector<std::pair<size_t, size_t>> Batches(const std::vector<T>& items, size_t max_count,
                                               size_t max_bytes, BytesFn bytes) {
  std::vector<std::pair<size_t, size_t>> batches;
  for (size_t begin = 0; begin < items.size();) {
    size_t end = begin, total = 0;
    while (end < items.size() && end - begin < max_count) {
      const size_t size = bytes(items[end]);
      if (end > begin && total + size > max_bytes) break;
      total += size;
      ++end;
    }
    batches.emplace_back(begin, end);
    begin = end;
  }
  return batches;
}

// Part `i` of `items` as cut by `batches` (empty past the end).
template <typename T>
std::vector<T> Part(const std::vector<T>& items,
                    const std::vector<std::pair<size_t, size_t>>& batches, size_t i) {
  if (i >= batches.size()) return {};
  return {items.begin() + batches[i].first, items.begin() + batches[i].second};
}

template <typename T>
size_t RecordBytes(const T& record) {
  return record.ToJson().dump(-1, ' ', false, Json::error_handler_t::replace).size() + 1;
}

// "[rank=3] text" -> (3, "text"); other lines (the launcher's own) -> (-1, line).
std::pair<int, std::string> SplitRank(const std::string& line) {
  if (line.rfind("[rank=", 0) == 0) {
    const size_t close = line.find("] ");
    int rank = -1;
    if (close != std::string::npos && absl::SimpleAtoi(line.substr(6, close - 6), &rank) &&
        rank >= 0) {
      return {rank, line.substr(close + 2)};
    }
  }
  return {-1, line};
}

// What an AllocationRun without the agent's stop waits on: never notified.
const absl::Notification& Never() {
  static const absl::Notification* never = new absl::Notification();
  return *never;
}

// The first point of the flush grid (every kFlushEvery, offset by `phase`) after `t`.
absl::Time NextFlush(absl::Time t, absl::Duration phase) {
  const absl::Time origin = absl::UnixEpoch() + phase;
  return origin + absl::Floor(t - origin, kFlushEvery) + kFlushEvery;
}

bool IsThreadVariable(const std::string& name) {
  for (const char* var : wire::kThreadVariables) {
    if (name == var) return true;
  }
  return false;
}

}  // namespace

void AllocationControl::Stop(wire::StopMode mode, absl::Duration kill_grace) {
  MutexLock lock(&mu_);
  if (mode == wire::StopMode::kKill) kill_at_ = std::min(kill_at_, clock_.Now() + kill_grace);
  if (mode_) return;  // signalled already (or will be at its start)
  mode_ = mode;
  if (child_ != nullptr) child_->Signal(SIGTERM);
}

void AllocationControl::Attach(Subprocess* child) {
  MutexLock lock(&mu_);
  child_ = child;
  if (child_ != nullptr && mode_) child_->Signal(SIGTERM);  // stopped before it started
}

void AllocationControl::KillIfDue() {
  MutexLock lock(&mu_);
  if (child_ != nullptr && clock_.Now() >= kill_at_) child_->Signal(SIGKILL);
}

bool AllocationControl::stopping() {
  MutexLock lock(&mu_);
  return mode_.has_value();
}

void AllocationControl::Describe(wire::RunningAllocation node) {
  MutexLock lock(&mu_);
  node_ = std::move(node);
}

wire::RunningAllocation AllocationControl::Claim() {
  MutexLock lock(&mu_);
  return node_;
}

void AllocationControl::SetHeld(int64_t lines, int64_t report_batches) {
  MutexLock lock(&mu_);
  node_.held_log_lines = lines;
  node_.held_report_batches = report_batches;
}

AllocationRun::AllocationRun(AllocationRunOptions options, wire::StartAction action,
                             std::shared_ptr<AllocationControl> control)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : RealClock()),
      stop_(options_.stop != nullptr ? *options_.stop : Never()),
      action_(std::move(action)),
      control_(std::move(control)),
      dir_((fs::path(options_.work_dir) / absl::StrCat("alloc-", action_.allocation)).string()),
      client_(options_.master_url, kPostTimeout),
      metrics_((fs::path(dir_) / "run" / "metrics.jsonl").string()) {
  // The allocation speaks for itself: its logs, reports and exit carry its own token, which
  // the master accepts for this allocation only, while it runs.
  client_.set_bearer_token(action_.allocation_token);
  client_.set_tls_ca_file(options_.tls_ca_file);
}

wire::AllocationOutput AllocationRun::Item() const {
  return wire::AllocationOutput{.allocation = action_.allocation,
                                .token = action_.allocation_token};
}

std::string AllocationRun::Prefix() const {
  return absl::StrCat("agent ", options_.agent_id, ": allocation ", action_.allocation);
}

absl::Status AllocationRun::Send(const wire::AllocationOutput& item, size_t bytes) {
  const auto once = [&]() -> absl::StatusOr<Json> {
    if (options_.shipper != nullptr) {
      absl::Status s = options_.shipper->Ship(item, bytes);
      if (!absl::IsUnimplemented(s)) return s.ok() ? absl::StatusOr<Json>(Json::object()) : s;
    }
    COHORT_RETURN_IF_ERROR(PostOwn(item));
    return Json::object();
  };
  if (!patient_) {
    absl::Status s = once().status();
    if (absl::IsUnavailable(s)) MasterAway(s);
    return s;
  }
  return RetryWhileUnavailable(once, clock_, stop_).status();
}

absl::Status AllocationRun::PostOwn(const wire::AllocationOutput& item) {
  const std::string base = absl::StrCat("/api/v1/allocations/", action_.allocation);
  client_.set_timeout(RequestTimeout(kPostTimeout, &stop_));
  if (item.logs) return client_.Post(base + "/logs", item.logs->ToJson()).status();
  if (item.reports) return client_.Post(base + "/reports", item.reports->ToJson()).status();
  if (item.exit) return client_.Post(base + "/exit", item.exit->ToJson()).status();
  return absl::OkStatus();  // nothing to send
}

void AllocationRun::MasterAway(const absl::Status& why) {
  away_reason_ = std::string(why.message().substr(0, 300));
  away_backoff_ = away_backoff_ == absl::ZeroDuration()
                      ? kAwayFirstRetry
                      : std::min(kAwayMaxRetry, away_backoff_ * 2);
  away_until_ = clock_.Now() + away_backoff_;
}

void AllocationRun::Fail(const std::string& why) {
  if (action_.trial_id > 0) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", why));
    FlushLogs();
  }
  if (absl::IsUnavailable(ReportExit(1))) KeepUndelivered(1);
}

int AllocationRun::Run() {
  int status = 1;
  absl::StatusOr<SubprocessOptions> launch = Prepare();
  if (launch.ok()) {
    WaitForChiefPort();
    status = StreamUntilExit(*launch);
    if (options_.on_launcher_exit) options_.on_launcher_exit();
    if (options_.host_ended != nullptr && *options_.host_ended) {
      Log(-1, options_.host_ended_note);
      if (status == 0) status = 128 + SIGTERM;
    }
  } else {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", launch.status().message()));
  }
  FlushLogs();
  if (absl::IsUnavailable(ReportExit(status))) KeepUndelivered(status);
  // The unpacked context stays: the trial ran inside it and may have written outputs there,
  // which are the user's. The archive was never written here (unpacked from memory).
  return status;
}

absl::StatusOr<SubprocessOptions> AllocationRun::Prepare() {
  const fs::path dir(dir_);
  for (const fs::path& sub : {dir / "context", dir / "run"}) {
    std::error_code ec;
    fs::create_directories(sub, ec);
    if (ec)
      return absl::UnavailableError(absl::StrCat("creating ", sub.string(), ": ", ec.message()));
  }
  // The run's files are the agent's user's alone: the config holds the environment's values.
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("making ", dir.string(), " private: ", ec.message()));
  }
  if (absl::Status s = UnpackContext(); !s.ok()) return s;
  if (absl::Status s = WritePrivateFile((dir / "config.yaml").string(), action_.config); !s.ok()) {
    return s;
  }
  absl::StatusOr<config::Json> tree = config::ParseYaml(action_.config);
  absl::StatusOr<config::ExperimentConfig> cfg =
      tree.ok() ? config::ParseExperimentConfig(*tree) : tree.status();
  if (!cfg.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the experiment config: ", cfg.status().message()));
  }
  profiling_ = cfg->profiling.enabled;
  absl::StatusOr<std::vector<std::string>> entry =
      config::ResolveEntrypoint(cfg->entrypoint, (dir / "context").string());
  if (!entry.ok()) return entry.status();
  SubprocessOptions launch;
  launch.argv = {options_.launcher,
                 "--slots",
                 absl::StrCat(action_.slots),
                 "--nnodes",
                 absl::StrCat(action_.nnodes),
                 "--node-rank",
                 absl::StrCat(action_.node_rank),
                 "--grace-period",
                 "60"};
  if (action_.nnodes > 1) {
    // The other nodes reach node 0's store at the port the master chose, and take it only when
    // it is this allocation's (--job-id: an earlier launcher may hold the port). One node needs no
    // agreed port: without --chief-addr the launcher binds a free one on loopback (port 0) and
    // tells its workers, so no process holding a port (a leftover, another program) can make
    // the run fail.
    launch.argv.insert(launch.argv.end(),
                       {"--chief-addr", action_.chief_addr, "--job-id", action_.allocation});
  }
  if (!options_.gpus.empty()) {
    launch.argv.insert(launch.argv.end(), {"--gpus", wire::FormatGpuList(options_.gpus)});
  }
  launch.argv.push_back("--");
  // The launcher dies with the agent (SIGKILL included) and takes its workers with it.
  launch.parent_death_signal = SIGKILL;
  launch.argv.insert(launch.argv.end(), entry->begin(), entry->end());
  std::map<std::string, std::string> config_env(cfg->environment_variables.begin(),
                                                cfg->environment_variables.end());
  launch.env = LaunchEnv(config_env);
  launch.cwd = (dir / "context").string();
  return launch;
}

absl::Status AllocationRun::UnpackContext() {
  const fs::path dir(dir_);
  // The agent's credential; a node without one (a Slurm job's) has only its allocation's.
  client::MasterClient agent(options_.master_url, absl::Seconds(60));
  agent.set_bearer_token(options_.secret.empty() ? action_.allocation_token : options_.secret);
  agent.set_tls_ca_file(options_.tls_ca_file);
  absl::StatusOr<std::string> archive = agent.GetBytes(action_.context);
  if (!archive.ok()) {
    return absl::UnavailableError(
        absl::StrCat("downloading the context: ", archive.status().message()));
  }
  if (archive->empty()) return absl::OkStatus();
  absl::Status unpacked = ExtractContext(*archive, (dir / "context").string());
  if (!unpacked.ok()) {
    return absl::InternalError(absl::StrCat("unpacking the context failed: ", unpacked.message()));
  }
  return absl::OkStatus();
}

std::map<std::string, std::optional<std::string>> AllocationRun::LaunchEnv(
    const std::map<std::string, std::string>& config_env) const {
  wire::WorkerEnv worker;
  worker.config_path = fs::absolute(fs::path(dir_) / "config.yaml").string();
  worker.run_dir = fs::absolute(fs::path(dir_) / "run").string();
  worker.hparams = action_.hparams;
  worker.trial_seed = action_.seed;
  worker.trial_id = action_.trial_id;
  worker.latest_checkpoint = action_.latest_checkpoint;
  worker.warm_start = action_.warm_start;
  worker.searcher_ops = action_.searcher_ops;  // adaptive_asha: its bracket's rungs
  worker.master_url = options_.master_url;
  worker.allocation_token = action_.allocation_token;
  // The agent's slots share its machine: each worker gets cores / slots compute threads
  // (cohort-launch would divide by this node's share only, oversubscribing the cores when
  // several trials run on one agent).
  worker.num_threads = options_.threads_per_worker;
  std::map<std::string, std::optional<std::string>> env(config_env.begin(), config_env.end());
  // Marks every process of the allocation, for the agent's next run to find (leftovers.h).
  env[kWorkDirMarker] = options_.work_dir;
  env[kAllocationMarker] = fs::absolute(dir_).string();
  env[kOwnerMarker] = OwnerTag();
  for (auto& [name, value] : worker.ToEnv()) {
    // A thread count set in the agent's environment or in the config wins.
    if (IsThreadVariable(name) && (std::getenv(name.c_str()) != nullptr || env.count(name))) {
      continue;
    }
    env[name] = value;
  }
  return env;
}

int AllocationRun::StreamUntilExit(const SubprocessOptions& launch) {
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(launch);
  if (!started.ok()) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", started.status().message()));
    return 1;
  }
  Subprocess& child = **started;
  control_->Attach(&child);
  StartSampler();
  LineSplitter lines(kLineBytes);
  const auto log_line = [this](absl::string_view line) { LogOutputLine(line); };
  absl::Time next_flush = NextFlush(clock_.Now(), options_.flush_phase);
  absl::Time exited_at = absl::InfiniteFuture();  // real time: the launcher is a real process
  bool open = true;
  int status = 1;
  while (true) {
    std::string chunk;
    // Awake at the flush's moment, not up to a read's wait after it: an agent's runs then flush
    // together and share the shipper's posts.
    const absl::Duration to_flush = next_flush - clock_.Now();
    // (At least 1 ms: a clock that stands still just before the moment must not spin.)
    const absl::Duration wait = to_flush > absl::ZeroDuration()
                                    ? std::clamp(to_flush, absl::Milliseconds(1), kReadWait)
                                    : kReadWait;  // away: the flush waits for the back-off
    if (open) open = child.ReadAvailable(&chunk, wait, kReadBytes);
    lines.Consume(chunk, log_line);
    const std::optional<int> exited = child.Poll();
    if (exited && open) {
      // The launcher is gone but something it left holds its output open: give it a moment to
      // finish writing, then stop it rather than wait for it.
      if (exited_at == absl::InfiniteFuture()) exited_at = absl::Now();
      if (absl::Now() - exited_at > kOutputAfterExit) {
        StopStragglers();
        open = false;
      }
    }
    const bool away = clock_.Now() < away_until_;  // the master did not answer: back off
    if ((exited && !open) ||
        (!away && (pending_logs_.size() >= kLogBatch || pending_log_bytes_ >= kLogBatchBytes ||
                   clock_.Now() >= next_flush))) {
      if (exited && !open) StopSampler();  // its last period goes with this flush
      Flush(/*last=*/exited && !open);
      next_flush = NextFlush(clock_.Now(), options_.flush_phase);
    }
    control_->KillIfDue();
    if (!exited) WatchProgress();
    if (exited && !open) {
      status = *exited;
      break;
    }
    // Its output is closed but it has not exited yet: look again soon (a real process, so
    // real time).
    if (!open) absl::SleepFor(absl::Milliseconds(50));
  }
  EndOutput(lines);
  control_->Attach(nullptr);
  return status;
}

void AllocationRun::LogOutputLine(absl::string_view line) {
  auto [rank, text] = SplitRank(std::string(line));
  Log(rank, std::move(text));
}

void AllocationRun::EndOutput(LineSplitter& lines) {
  lines.Finish([this](absl::string_view line) { LogOutputLine(line); });
  StopStragglers();
  if (lines.cut_lines() > 0) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", lines.cut_lines(),
                         " output line(s) longer than ", kLineBytes, " bytes were cut (",
                         lines.dropped_bytes(), " bytes dropped)"));
  }
}

void AllocationRun::WaitForChiefPort() {
  if (action_.nnodes <= 1 || action_.node_rank != 0) return;
  absl::StatusOr<net::HostPort> chief = net::ParseHostPort(action_.chief_addr, 0);
  if (!chief.ok() || chief->port <= 0) return;  // the launcher says what is wrong with it
  const absl::Time deadline = absl::Now() + kChiefPortWait;
  bool said = false;
  while (absl::Now() < deadline && !control_->stopping()) {
    int bound = 0;
    absl::StatusOr<int> fd = net::Listen("", chief->port, &bound);
    if (fd.ok()) {
      ::close(*fd);
      return;
    }
    const std::vector<int> holders = net::PortHolderPids(chief->port);
    const auto ours = std::find_if(holders.begin(), holders.end(), [&](int pid) {
      return CarriesMarker(pid, kWorkDirMarker, options_.work_dir);
    });
    if (ours == holders.end()) return;  // not this agent's: the launcher's error names it
    if (!said) {
      Log(-1, absl::StrCat("agent ", options_.agent_id, ": waiting up to ",
                           absl::FormatDuration(kChiefPortWait), " for rendezvous port ",
                           chief->port, ", held by pid ", *ours,
                           " of an earlier allocation on this agent that is still stopping"));
      said = true;
    }
    absl::SleepFor(absl::Milliseconds(200));  // a real process's port: real time
  }
}

void AllocationRun::StopStragglers() {
  absl::StatusOr<int> stopped =
      StopMarked(kAllocationMarker, fs::absolute(dir_).string(), absl::Seconds(5));
  if (!stopped.ok()) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", stopped.status().message()));
  } else if (*stopped > 0) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": stopped ", *stopped,
                         " process(es) the trial left running after cohort-launch exited"));
  }
}

void AllocationRun::Flush(bool last) {
  // While the trial runs, one try per post: a master that is away must not stop the reading of
  // its output (the trial would block on its writes). After its exit, patiently.
  patient_ = last;
  away_until_ = absl::InfinitePast();
  FlushLogs();
  // A flood of records goes kRecordsPerFlush at a time; after the exit, all that is left. While
  // the master is away, no new records are read (they wait in metrics.jsonl).
  while ((last || clock_.Now() >= away_until_) && PostReports() && last) {
  }
  patient_ = true;
  control_->SetHeld(static_cast<int64_t>(pending_logs_.size()),
                    static_cast<int64_t>(unsent_reports_.size()));
  if (clock_.Now() >= away_until_) away_backoff_ = absl::ZeroDuration();  // it answered
  // The master restarted and no longer knows this allocation: checkpoint and stop.
  if (master_forgot_) control_->Stop(wire::StopMode::kPreempt, options_.kill_grace);
}

void AllocationRun::Log(int rank, std::string line) {
  if (pending_log_bytes_ >= kMaxPendingBytes) {
    ++dropped_logs_;  // the master is away and the buffer full
    return;
  }
  AddDropMarker();
  pending_logs_.push_back({rank, wire::CleanLogLine(std::move(line))});
  pending_log_bytes_ += JsonBytes(pending_logs_.back());
}

void AllocationRun::AddDropMarker() {
  if (dropped_logs_ == 0) return;
  // The real cause: a master that did not answer, or one that answered it could not take them
  // (503: its disk full, shutting down), in the post's own words.
  const std::string marker = absl::StrCat(
      "agent ", options_.agent_id, ": ", dropped_logs_,
      " output line(s) dropped while the master could not take them (the agent holds at most ",
      kMaxPendingBytes >> 20, " MiB of them); the last post failed: ",
      away_reason_.empty() ? std::string("the master did not answer") : away_reason_);
  dropped_logs_ = 0;
  pending_logs_.push_back({-1, marker});
  pending_log_bytes_ += JsonBytes(pending_logs_.back());
}

void AllocationRun::FlushLogs() {
  // Two rounds when the buffer was full and lines were dropped: once what it held has gone, the
  // line counting the drop goes at once, not only before the trial's next line (a trial that
  // prints nothing more, or has ended, would never say it).
  for (int round = 0; round < 2; ++round) {
    if (pending_log_bytes_ < kMaxPendingBytes) AddDropMarker();
    size_t sent = 0;
    for (const auto& [begin, end] : Batches(pending_logs_, kLogBatch, kLogBatchBytes, JsonBytes)) {
      if (!PostLogs(begin, end)) break;  // the master is away: the rest waits
      sent = end;
    }
    pending_logs_.erase(pending_logs_.begin(), pending_logs_.begin() + sent);
    pending_log_bytes_ = 0;
    for (const wire::LogLine& line : pending_logs_) pending_log_bytes_ += JsonBytes(line);
    if (dropped_logs_ == 0 || pending_log_bytes_ >= kMaxPendingBytes) break;
  }
}

bool AllocationRun::PostLogs(size_t begin, size_t end) {
  wire::AllocationOutput item = Item();
  item.logs = wire::LogBatch{.trial_id = action_.trial_id,
                             .lines = {pending_logs_.begin() + begin, pending_logs_.begin() + end},
                             .node = action_.node_rank};
  size_t bytes = 0;
  for (const wire::LogLine& line : item.logs->lines) bytes += JsonBytes(line);
  const absl::Status r = Send(item, bytes);
  const wire::LogBatch& batch = *item.logs;
  // Kept for the next try (or, once the run has ended, for the agent's next run: KeepUndelivered).
  if (absl::IsUnavailable(r)) return false;
  if (absl::IsNotFound(r)) {
    master_forgot_ = true;  // the lines were stored anyway
  } else if (absl::IsInvalidArgument(r) && end - begin > 1) {
    // The master refused the batch (4xx): halves, so that one line it will not take does not
    // lose the others (at most log2(kLogBatch) levels).
    const size_t middle = begin + (end - begin) / 2;
    return PostLogs(begin, middle) && PostLogs(middle, end);
  } else if (!r.ok()) {
    COHORT_LOG(WARNING) << Prefix() << ": " << batch.lines.size() << " log line(s) of trial "
                        << action_.trial_id << " not delivered, dropped: " << r;
  }
  return true;
}

std::vector<wire::ReportRecord> AllocationRun::NewRecords() {
  std::vector<wire::ReportRecord> records;
  const uint64_t long_lines = metrics_.long_lines();
  for (const Json& line : metrics_.NewLines(kRecordsPerFlush)) {
    ++records_seen_;
    absl::StatusOr<wire::ReportRecord> record =
        wire::ParseReportRecord(line, absl::StrCat("metrics.jsonl record ", records_seen_));
    if (record.ok()) {
      records.push_back(*std::move(record));
    } else {
      Log(-1, absl::StrCat("agent ", options_.agent_id,
                           ": skipping a report: ", record.status().message()));
    }
  }
  if (metrics_.long_lines() > long_lines) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": skipped ",
                         metrics_.long_lines() - long_lines, " metrics.jsonl line(s) longer than ",
                         JsonLinesTail::kDefaultMaxLineBytes, " bytes"));
  }
  return records;
}

std::optional<wire::ProgressRecord> AllocationRun::ReadProgress() {
  absl::StatusOr<wire::ProgressRecord> progress =
      wire::ReadProgressFile((fs::path(dir_) / "run" / "progress.json").string());
  if (absl::IsNotFound(progress.status())) return std::nullopt;  // nothing reported yet
  if (progress.ok()) return *std::move(progress);
  // Said once per distinct error: the file is read every flush.
  if (progress.status().message() != last_progress_error_) {
    last_progress_error_ = std::string(progress.status().message());
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": ignoring ", last_progress_error_));
  }
  return std::nullopt;
}

void AllocationRun::StartSampler() {
  if (!profiling_) return;
  sampler_ = std::make_unique<sampler::SystemSampler>(
      sampler::SystemSamplerOptions{}, std::make_unique<sampler::ProcCounterSource>(), RealClock(),
      [this](const sampler::SystemMetrics& m) {
        wire::SystemMetricsRecord record{
            absl::ToDoubleSeconds(m.time - absl::UnixEpoch()), options_.agent_id, m.metrics, {}};
        for (const sampler::GpuMetrics& gpu : m.gpus) {
          record.gpus.push_back({gpu.uuid, gpu.gpu_util, gpu.gpu_free_memory});
        }
        MutexLock lock(&system_mu_);
        if (system_records_.size() < wire::kMaxReportBatchLines) {
          system_records_.push_back(std::move(record));
        }
      });
  if (absl::Status started = sampler_->Start(); !started.ok()) {
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": no system metrics: ", started.message()));
    sampler_.reset();
  }
}

void AllocationRun::StopSampler() {
  if (sampler_ != nullptr) sampler_->Stop();
}

std::vector<wire::SystemMetricsRecord> AllocationRun::TakeSystemRecords() {
  MutexLock lock(&system_mu_);
  return std::exchange(system_records_, {});
}

std::vector<wire::StepProfileRecord> AllocationRun::NewStepProfiles() {
  std::vector<wire::StepProfileRecord> records;
  if (!profiling_) return records;
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(fs::path(dir_) / "run" / std::string(wire::kStepProfileDir), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || entry.path().extension() != ".jsonl") continue;
    JsonLinesTail& tail =
        step_profile_tails_.try_emplace(name, JsonLinesTail(entry.path().string())).first->second;
    for (const Json& line : tail.NewLines()) {
      absl::StatusOr<wire::StepProfileRecord> record = wire::ParseStepProfileRecord(line, name);
      if (record.ok()) {
        records.push_back(*std::move(record));
      } else if (step_profile_errors_.insert(name).second) {
        Log(-1, absl::StrCat("agent ", options_.agent_id, ": skipping step profiles: ",
                             record.status().message(), " (later bad lines are not logged)"));
      }
    }
  }
  return records;  // no directory yet: nothing profiled so far
}

std::vector<RankState> AllocationRun::ReadRankStates() const {
  std::vector<RankState> ranks;
  std::error_code ec;
  const fs::path dir = fs::path(dir_) / "run" / "progress";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    absl::StatusOr<std::string> text = ReadSmallFile(it->path().string(), 4096);
    absl::StatusOr<Json> json = text.ok() ? ParseJsonBounded(*text) : text.status();
    absl::StatusOr<wire::ProgressBeat> beat =
        json.ok() ? wire::ParseProgressBeat(*json) : json.status();
    if (!beat.ok()) continue;  // being replaced, or not a beat: judged on the next look
    RankState state{.beat = *beat};
    // The process state after the command's ')' in /proc/PID/stat: 'T' or 't' is stopped.
    const std::string stat =
        ReadSmallFile(absl::StrCat("/proc/", beat->pid, "/stat"), 4096).value_or("");
    const size_t close = stat.rfind(')');
    state.stopped = beat->pid > 0 && close != std::string::npos && close + 2 < stat.size() &&
                    (stat[close + 2] == 'T' || stat[close + 2] == 't');
    ranks.push_back(std::move(state));
  }
  return ranks;
}

void AllocationRun::WatchProgress() {
  const absl::Time now = absl::Now();  // the beats carry real time
  if (now < next_progress_check_) return;
  next_progress_check_ = now + absl::Seconds(1);
  const StallVerdict verdict = JudgeProgress(ReadRankStates(), now, options_.progress_deadline);
  if (verdict.note != stall_note_) {
    stall_note_ = verdict.note;
    unsent_stall_ = verdict.note;  // "" tells the master it moves again
    if (!verdict.note.empty()) {
      Log(-1, absl::StrCat("agent ", options_.agent_id, ": ", verdict.note));
    }
  }
  if (verdict.fail && !stopped_for_stall_) {
    stopped_for_stall_ = true;
    Log(-1, absl::StrCat("agent ", options_.agent_id, ": stopping the run: no progress within ",
                         absl::FormatDuration(options_.progress_deadline),
                         " (cohort-agent --progress-deadline)"));
    control_->Stop(wire::StopMode::kKill, options_.kill_grace);
  }
}

bool AllocationRun::PostReports() {
  std::vector<wire::SystemMetricsRecord> system = TakeSystemRecords();
  std::vector<wire::StepProfileRecord> steps = NewStepProfiles();
  std::vector<wire::ReportRecord> records;
  std::optional<wire::ProgressRecord> progress;
  if (action_.reports) {
    records = NewRecords();
    progress = ReadProgress();
  }
  const bool more = records.size() >= kRecordsPerFlush;
  if (records.empty() && !progress && system.empty() && steps.empty() && !unsent_stall_) {
    return false;
  }
  // As many posts as the larger part needs, each part below kBatchBytes of JSON; the progress
  // and system metrics go with the last.
  const auto record_batches =
      Batches(records, wire::kMaxReportBatchLines, kBatchBytes, RecordBytes<wire::ReportRecord>);
  const auto step_batches = Batches(steps, wire::kMaxStepProfilesPerBatch, kBatchBytes,
                                    RecordBytes<wire::StepProfileRecord>);
  const size_t posts = std::max<size_t>({1, record_batches.size(), step_batches.size()});
  for (size_t i = 0; i < posts; ++i) {
    wire::ReportBatch batch{action_.trial_id, Part(records, record_batches, i)};
    batch.step_profiles = Part(steps, step_batches, i);
    if (i + 1 == posts) {
      batch.progress = progress;  // the latest, with the last records
      batch.system_metrics = std::move(system);
      batch.stalled = std::exchange(unsent_stall_, std::nullopt);
    }
    PostReportBatch(std::move(batch));
  }
  return more && clock_.Now() >= away_until_;
}

void AllocationRun::PostReportBatch(wire::ReportBatch batch) {
  // In order: what the master missed while it was away goes first.
  const size_t bytes = RecordBytesOf(batch);
  unsent_reports_.push_back({std::move(batch), bytes});
  unsent_bytes_ += bytes;
  while (!unsent_reports_.empty()) {
    const UnsentReports& front = unsent_reports_.front();
    if (!TryReportBatch(front.batch, front.bytes)) break;  // away: kept for the next flush
    unsent_bytes_ -= front.bytes;
    unsent_reports_.pop_front();
  }
  while (unsent_bytes_ > kMaxPendingBytes && unsent_reports_.size() > 1) {
    COHORT_LOG(WARNING) << Prefix() << ": the master is unreachable; dropped "
                        << unsent_reports_.front().batch.lines.size() << " reports of trial "
                        << action_.trial_id << " to keep at most " << kMaxPendingBytes
                        << " bytes of them";
    unsent_bytes_ -= unsent_reports_.front().bytes;
    unsent_reports_.pop_front();
  }
}

size_t AllocationRun::RecordBytesOf(const wire::ReportBatch& batch) {
  return batch.ToJson().dump(-1, ' ', false, Json::error_handler_t::replace).size();
}

bool AllocationRun::TryReportBatch(const wire::ReportBatch& batch, size_t bytes) {
  wire::AllocationOutput item = Item();
  item.reports = batch;
  const absl::Status r = Send(item, bytes);
  if (absl::IsUnavailable(r) && !patient_) return false;
  if (absl::IsFailedPrecondition(r)) {
    // A later allocation of the trial superseded this one: the master takes no more reports.
    if (!reports_refused_) {
      COHORT_LOG(WARNING) << Prefix() << ": " << r.message();
      reports_refused_ = true;
    }
  } else if (!r.ok() && !absl::IsNotFound(r)) {
    COHORT_LOG(WARNING) << Prefix() << ": " << batch.lines.size() << " reports and "
                        << batch.step_profiles.size() << " step profiles of trial "
                        << action_.trial_id << " not delivered, dropped: " << r;
  }
  return true;
}

absl::Status AllocationRun::ReportExit(int status) {
  const wire::ExitReport exit{action_.node_rank, status};
  wire::AllocationOutput item = Item();
  item.exit = exit;
  const absl::Status r = Send(item, kExitItemBytes);
  if (r.ok()) return absl::OkStatus();
  // NotFound: the master already ended the allocation (it restarted, or lost this agent).
  // Otherwise it counts the node as failed once it stops hearing from it or the agent
  // re-registers, so the trial is not stuck either way.
  COHORT_LOG(WARNING) << Prefix() << ": the exit report (node " << exit.node << ", status "
                      << exit.status << ") was not taken: " << r;
  return r;
}

void AllocationRun::KeepUndelivered(int status) {
  UndeliveredExit kept{.allocation = action_.allocation,
                       .token = action_.allocation_token,
                       .trial_id = action_.trial_id,
                       .node = action_.node_rank,
                       .status = status,
                       .lines = std::move(pending_logs_)};
  const size_t lines = kept.lines.size();
  pending_logs_.clear();
  pending_log_bytes_ = 0;
  if (absl::Status s = SaveUndelivered(options_.work_dir, options_.agent_id, std::move(kept));
      !s.ok()) {
    COHORT_LOG(ERROR) << Prefix() << ": the master is unreachable and keeping the exit (status "
                      << status << ") and " << lines
                      << " log line(s) for the next run failed: " << s << "; they are lost";
    return;
  }
  COHORT_LOG(WARNING) << Prefix() << ": the master is unreachable; kept the exit (status " << status
                      << ") and the last of " << lines
                      << " log line(s) in the work directory, for the agent's next run to deliver";
}

}  // namespace cohort::agent
