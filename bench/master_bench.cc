// cohort-bench master: cohort-master under load (docs/performance.md, "The master under load").
// Starts a real cohort-master (a private data directory, a free port), submits experiments of
// 1-slot trials through its REST API and plays agents against it the way cohort-agent does:
// register, long-poll for actions, and for each allocation post its log lines, progress and
// training metrics every flush interval, then its exit, with the allocation's own token. No
// trial processes run: the load is the master's alone. Halfway, with --kill-restart, the master
// is killed with SIGKILL and started again on the same data directory and port; the agents ride
// it out and go on. At the end it prints the master's scheduling pass times (from /metrics),
// the latency of each route as the agents saw it, the rates acknowledged, the database size,
// and how many acknowledged log lines and metric reports the master no longer has (the promise:
// zero).

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_commands.h"
#include "bench/proc_stat.h"
#include "client/master_client.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/private_file.h"
#include "common/sibling_program.h"
#include "common/subprocess.h"
#include "master/db/testing/postgres_server.h"
#include "wire/agent_protocol.h"
#include "wire/user_bodies.h"

namespace cohort::bench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Latency samples per route, from every agent thread, each with when it began.
class Latencies {
 public:
  void Add(const std::string& route, absl::Time start, absl::Duration d, bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    Route& r = routes_[route];
    r.samples.push_back({start, absl::ToDoubleMilliseconds(d)});
    if (!ok) ++r.errors;
  }
  // Requests timed so far, every route's.
  size_t Count() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [route, r] : routes_) n += r.samples.size();
    return n;
  }
  // p99 of the output posts (every POST but registration) begun in [from, to); 0 when none.
  double OutputsP99(absl::Time from, absl::Time to) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> ms;
    for (const auto& [route, r] : routes_) {
      if (!absl::StartsWith(route, "POST /") || route == "POST /agents") continue;
      for (const Sample& s : r.samples) {
        if (s.start >= from && s.start < to) ms.push_back(s.ms);
      }
    }
    return std::get<1>(Percentiles(std::move(ms)));
  }
  // Every route's percentiles over the whole run, and over the requests begun at `steady` or
  // later (after the start's burst: every agent registering, the first placements).
  void Print(absl::Time steady, double warmup_seconds) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::printf("\n%-34s %9s %9s %9s %9s %7s %19s\n", "route (as the agents saw it)", "requests",
                "p50 ms", "p99 ms", "max ms", "errors",
                absl::StrFormat("after %.0f s: p50/p99", warmup_seconds).c_str());
    for (const auto& [route, r] : routes_) {
      std::vector<double> all, later;
      for (const Sample& s : r.samples) {
        all.push_back(s.ms);
        if (s.start >= steady) later.push_back(s.ms);
      }
      const auto [p50, p99, max] = Percentiles(all);
      const auto [later50, later99, later_max] = Percentiles(later);
      std::printf("%-34s %9zu %9.1f %9.1f %9.1f %7lld %9.1f/%9.1f\n", route.c_str(), all.size(),
                  p50, p99, max, static_cast<long long>(r.errors), later50, later99);
    }
  }

 private:
  struct Sample {
    absl::Time start;
    double ms;
  };
  struct Route {
    std::vector<Sample> samples;
    int64_t errors = 0;
  };
  // p50, p99 and max of `ms` (zeros when empty).
  static std::tuple<double, double, double> Percentiles(std::vector<double> ms) {
    if (ms.empty()) return {0, 0, 0};
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[std::min(ms.size() - 1, size_t(q * ms.size()))]; };
    return {at(0.5), at(0.99), ms.back()};
  }
  mutable std::mutex mu_;
  std::map<std::string, Route> routes_;
};

// What the master acknowledged (200) per trial: log lines and metric reports.
class Acked {
 public:
  void Add(int64_t trial, int64_t lines, int64_t reports) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& [l, r] = by_trial_[trial];
    l += lines;
    r += reports;
    lines_ += lines;
    reports_ += reports;
  }
  std::map<int64_t, std::pair<int64_t, int64_t>> ByTrial() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_trial_;
  }
  std::pair<int64_t, int64_t> Totals() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {lines_, reports_};
  }

 private:
  mutable std::mutex mu_;
  std::map<int64_t, std::pair<int64_t, int64_t>> by_trial_;
  int64_t lines_ = 0, reports_ = 0;
};

// cohort-master as a child process, restartable on its data directory and port. Its output
// goes to DATA_DIR/master.log (through sh, so no pipe can fill up and stall it).
class MasterProcess {
 public:
  MasterProcess(std::string binary, std::string data_dir, std::vector<std::string> args)
      : binary_(std::move(binary)), data_dir_(std::move(data_dir)), args_(std::move(args)) {}

  // Starts it (the first time on any free port, after a kill on the same one); the URL.
  absl::StatusOr<std::string> Start() {
    const std::string log = data_dir_ + "/master.log";
    const size_t offset = fs::exists(log) ? fs::file_size(log) : 0;
    std::string extra;
    // Each single-quoted for sh (a quote inside closes the quoting, is escaped, and reopens it).
    for (const std::string& arg : args_) {
      absl::StrAppend(&extra, " '", absl::StrReplaceAll(arg, {{"'", "'\\''"}}), "'");
    }
    const std::string command =
        absl::StrCat("exec '", binary_, "' --port ", port_, " --data-dir '", data_dir_,
                     "' --agent-timeout 60", extra, " >> '", log, "' 2>&1");
    COHORT_ASSIGN_OR_RETURN(child_, Subprocess::Start({.argv = {"/bin/sh", "-c", command}}));
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (;;) {
      std::ifstream in(log);
      in.seekg(static_cast<std::streamoff>(offset));
      const std::string out((std::istreambuf_iterator<char>(in)), {});
      if (const size_t at = out.find("listening on http://"); at != std::string::npos) {
        url_ = out.substr(at + 13, out.find_first_of(" \n", at + 13) - at - 13);
        port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
        return url_;
      }
      if (absl::Now() > deadline || child_->Poll()) {
        return absl::UnavailableError(
            absl::StrCat("cohort-master did not start listening (", log, "):\n", out));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  // The CPU seconds (user and system) its processes used so far, a killed one's included.
  double CpuSeconds() const {
    return spent_ + (child_ != nullptr ? ProcessCpuSeconds(child_->pid()).value_or(0) : 0);
  }
  void Kill() {
    spent_ += ProcessCpuSeconds(child_->pid()).value_or(0);
    child_->Signal(SIGKILL);
    // Killed on purpose: its status says nothing; a master that will not die shows in Start.
    child_->Wait(absl::Seconds(10)).IgnoreError();
  }

 private:
  std::string binary_, data_dir_, url_;
  std::vector<std::string> args_;
  int port_ = 0;
  std::unique_ptr<Subprocess> child_;
  double spent_ = 0;  // by processes killed before this one
};

// What every simulated agent shares.
struct Shared {
  const MasterBenchOptions& options;
  std::string url;
  std::string secret;
  Latencies latencies;
  Acked acked;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> allocations{0}, exits{0};
  std::atomic<int64_t> running{0};  // allocations the agents hold now (started, not exited)
  std::atomic<int64_t> stops{0};    // stop actions received (after a restart: not re-adopted)
  // Stop actions for allocations whose exit went in a post that got no answer (the master was
  // killed meanwhile): the old master stored the exit, so the new one does not know them.
  std::atomic<int64_t> stops_after_exit{0};
  // Stop actions for allocations the agent does not hold: after a restart, starts the old master
  // had queued but not delivered (the new one cannot re-send them: it keeps only the tokens'
  // hashes), which it gives up after its re-adoption grace and queues again.
  std::atomic<int64_t> stops_unknown{0};
  std::mutex mu;
  std::vector<int64_t> trials_stopped_after_exit;  // checked at the end: COMPLETED, not requeued
  int64_t stops_before_kill = 0;        // stops when the master was killed (RunLoad's thread only)
  absl::Time load_start = absl::Now();  // when the agents start
};

// Runs `request` and records its latency under `route`.
template <typename F>
auto Timed(Shared& shared, const std::string& route, F request) -> decltype(request()) {
  const absl::Time start = absl::Now();
  auto result = request();
  shared.latencies.Add(route, start, absl::Now() - start, result.ok());
  return result;
}

// One simulated cohort-agent: registers, long-polls, and runs each allocation it is given as a
// trial that reports at the set rates for trial_seconds, then exits 0.
class SimAgent {
 public:
  SimAgent(int index, Shared& shared)
      : shared_(shared),
        id_(absl::StrCat("sim-", index)),
        rng_(index),
        agent_client_(Client(shared.secret)) {}

  void Run() {
    if (shared_.options.poll_seconds > 0) return RunWithPoller();
    while (!shared_.stop) {
      if (!registered_) registered_ = Register();
      if (registered_) Poll();
      Flush();
      if (!registered_) absl::SleepFor(absl::Milliseconds(shared_.options.flush_ms));
    }
  }

 private:
  struct Allocation {
    wire::StartAction start;
    absl::Time started;
    absl::Duration length;  // how long it runs: trial_seconds, spread by trial_seconds_jitter
    double lines_due = 0, reports_due = 0;
    int64_t steps = 0;
    std::vector<wire::LogLine> lines;         // not acknowledged yet
    std::vector<wire::ReportRecord> reports;  // not acknowledged yet
    bool done = false;                        // completed: only the exit is left
    bool stopped = false;                     // the master stopped it: exit 143 (SIGTERM)
    bool exit_unanswered = false;             // its exit went in a post that got no answer
    // Its own connection, kept for its life, with its token (as cohort-agent's AllocationRun).
    std::unique_ptr<client::MasterClient> client;
  };

  client::MasterClient Client(const std::string& token) const {
    client::MasterClient client(shared_.url, absl::Seconds(30));
    client.set_bearer_token(token);
    return client;
  }

  // Registers, claiming what it runs as cohort-agent does (a restarted master re-adopts it).
  bool Register() {
    wire::AgentRegistration r{id_, shared_.options.slots, "127.0.0.1", 29500, 29599, {}};
    for (const auto& [id, a] : allocations_) {
      r.running.push_back(id);
      r.allocations.push_back({.allocation = id,
                               .trial_id = a.start.trial_id,
                               .node_rank = a.start.node_rank,
                               .slots = a.start.slots,
                               .held_log_lines = static_cast<int64_t>(a.lines.size()),
                               .held_report_batches = a.reports.empty() ? 0 : 1});
    }
    return Timed(shared_, "POST /agents",
                 [&] { return agent_client_.Post("/api/v1/agents", r.ToJson()); })
        .ok();
  }

  // --poll-seconds: as cohort-agent, a thread of its own long-polls (answered at once when an
  // action comes, else after poll_seconds) and hands the actions over; this thread registers,
  // applies them and flushes every flush_ms.
  void RunWithPoller() {
    client::MasterClient poll_client = Client(shared_.secret);
    std::thread poller([&] {
      const absl::Duration wait = absl::Seconds(shared_.options.poll_seconds);
      while (!shared_.stop) {
        if (!registered_) {
          absl::SleepFor(absl::Milliseconds(20));
          continue;
        }
        std::optional<std::vector<wire::Action>> actions = FetchActions(poll_client, wait);
        std::lock_guard<std::mutex> lock(handed_mu_);
        if (!actions) registered_ = false;  // forgotten or away: register again
        if (actions) handed_.insert(handed_.end(), actions->begin(), actions->end());
      }
    });
    const absl::Duration period = absl::Milliseconds(shared_.options.flush_ms);
    // Agents on 200 machines do not flush in step: each starts at its own phase of the period
    // (in step, all 200 posts would arrive at once every period and queue behind each other).
    absl::SleepFor(period * std::uniform_real_distribution<double>(0, 1)(rng_));
    while (!shared_.stop) {
      const absl::Time next = absl::Now() + period;
      std::vector<wire::Action> actions;
      {
        std::lock_guard<std::mutex> lock(handed_mu_);
        actions.swap(handed_);
      }
      // Before registering: a registration claims what the agent runs, these starts included.
      for (const wire::Action& action : actions) Apply(action);
      if (!registered_) registered_ = Register();
      Flush();
      absl::SleepFor(next - absl::Now());
    }
    poller.join();
  }

  // The actions a long poll of `wait` brought (perhaps none); nullopt when it failed.
  std::optional<std::vector<wire::Action>> FetchActions(client::MasterClient& client,
                                                        absl::Duration wait) {
    absl::StatusOr<Json> batch = Timed(shared_, "GET /agents/{id}/actions (long poll)", [&] {
      return client.Get(
          absl::StrCat("/api/v1/agents/", id_, "/actions?timeout=", absl::ToDoubleSeconds(wait)),
          wait + absl::Seconds(30));
    });
    if (!batch.ok()) return std::nullopt;
    std::vector<wire::Action> actions;
    absl::StatusOr<std::vector<absl::StatusOr<wire::Action>>> parsed =
        wire::ParseActionBatch(*batch);
    if (!parsed.ok()) return actions;
    for (absl::StatusOr<wire::Action>& action : *parsed) {
      if (action.ok()) actions.push_back(*std::move(action));
    }
    return actions;
  }

  void Poll() {
    std::optional<std::vector<wire::Action>> actions =
        FetchActions(agent_client_, absl::Milliseconds(shared_.options.flush_ms));
    // The master restarted and forgot us, or is away: register again once it answers.
    if (!actions) registered_ = false;
    if (actions) {
      for (const wire::Action& action : *actions) Apply(action);
    }
  }

  void Apply(const wire::Action& action) {
    if (const auto* start = std::get_if<wire::StartAction>(&action)) {
      std::uniform_real_distribution<double> spread(-shared_.options.trial_seconds_jitter,
                                                    shared_.options.trial_seconds_jitter);
      Allocation a{*start, absl::Now(),
                   absl::Seconds(shared_.options.trial_seconds * (1 + spread(rng_)))};
      // What the agent's ended trials had accrued but not sent goes on here, so the rates
      // are offered whole (1,600 trials ending every 10 s would drop ~0.5 report each).
      a.lines_due = std::exchange(carried_lines_, 0.0);
      a.reports_due = std::exchange(carried_reports_, 0.0);
      a.client = std::make_unique<client::MasterClient>(Client(start->allocation_token));
      allocations_[start->allocation] = std::move(a);
      ++shared_.allocations;
      ++shared_.running;
    } else if (const auto* stop = std::get_if<wire::StopAction>(&action)) {
      auto it = allocations_.find(stop->allocation);
      const bool after_exit = it != allocations_.end() && it->second.exit_unanswered;
      ++(it == allocations_.end() ? shared_.stops_unknown
         : after_exit             ? shared_.stops_after_exit
                                  : shared_.stops);
      if (after_exit) {
        std::lock_guard<std::mutex> lock(shared_.mu);
        shared_.trials_stopped_after_exit.push_back(it->second.start.trial_id);
      }
      if (it != allocations_.end()) it->second.done = it->second.stopped = true;
    }
  }

  // Per allocation: what became due since the last flush, then its posts, then (when its time
  // is up and everything went out) its exit. An allocation the master no longer knows (it was
  // restarted and requeued the trial) is dropped with what it had not delivered.
  void Flush() {
    // The rates are the cluster's (--log-lines-per-second: all running trials together), so
    // each running allocation offers its share of them; slots idle between one trial's exit and
    // the next's start offer nothing, so dividing by the slots would fall short of the rate.
    const double share = static_cast<double>(std::max<int64_t>(1, shared_.running.load()));
    const absl::Time now = absl::Now();
    const double dt = absl::ToDoubleSeconds(now - last_flush_);
    last_flush_ = now;
    for (auto it = allocations_.begin(); it != allocations_.end();) {
      Allocation& a = it->second;
      a.lines_due += dt * shared_.options.log_lines_per_second / share;
      a.reports_due += dt * shared_.options.metric_reports_per_second / share;
      Generate(a, now);
      if (shared_.options.agent_wide_posts || Deliver(a)) {
        ++it;
      } else {
        it = Drop(it);
      }
    }
    if (shared_.options.agent_wide_posts) DeliverTogether();
  }

  // An allocation that exited or that the master no longer knows: what it had accrued goes on
  // with the agent's next one.
  std::map<std::string, Allocation>::iterator Drop(std::map<std::string, Allocation>::iterator it) {
    carried_lines_ += it->second.lines_due;
    carried_reports_ += it->second.reports_due;
    --shared_.running;
    return allocations_.erase(it);
  }

  // The master stored them: counted as acknowledged, no longer held.
  void AckLines(Allocation& a) {
    shared_.acked.Add(a.start.trial_id, static_cast<int64_t>(a.lines.size()), 0);
    a.lines.clear();
  }
  void AckReports(Allocation& a) {
    const auto training = std::count_if(a.reports.begin(), a.reports.end(), [](const auto& r) {
      return r.kind == wire::ReportKind::kTraining;
    });
    shared_.acked.Add(a.start.trial_id, 0, training);
    a.reports.clear();
  }
  static wire::ExitReport ExitOf(const Allocation& a) {
    return {a.start.node_rank, a.stopped ? 143 : 0};  // stopped: SIGTERM
  }

  static wire::ReportBatch Reports(const Allocation& a) {
    wire::ReportBatch batch{a.start.trial_id, a.reports};
    batch.progress = wire::ProgressRecord{};
    batch.progress->completed = static_cast<double>(a.steps);
    batch.progress->total = 100;
    batch.progress->unit = "batches";
    return batch;
  }

  // --agent-wide-posts: every allocation's lines, reports and (when done) exit in one post; each
  // item's result is read as Deliver reads its three answers. Nothing is acknowledged when the
  // post itself fails: all of it goes again at the next flush.
  void DeliverTogether() {
    wire::OutputBatch batch;
    for (auto& [id, a] : allocations_) {
      wire::AllocationOutput item{.allocation = id, .token = a.start.allocation_token};
      if (!a.lines.empty()) item.logs = wire::LogBatch{a.start.trial_id, a.lines};
      if (!a.reports.empty()) item.reports = Reports(a);
      if (a.done) item.exit = ExitOf(a);
      if (item.logs || item.reports || item.exit) batch.items.push_back(std::move(item));
    }
    if (batch.items.empty()) return;
    absl::StatusOr<Json> answer = Timed(shared_, "POST /agents/{id}/outputs", [&] {
      return agent_client_.Post(absl::StrCat("/api/v1/agents/", id_, "/outputs"), batch.ToJson());
    });
    if (!answer.ok()) {
      for (const wire::AllocationOutput& item : batch.items) {
        auto it = allocations_.find(item.allocation);
        if (item.exit && it != allocations_.end()) it->second.exit_unanswered = true;
      }
      return;
    }
    absl::StatusOr<wire::OutputResults> results = wire::ParseOutputResults(*answer);
    if (!results.ok() || results->results.size() != batch.items.size()) return;
    for (size_t i = 0; i < batch.items.size(); ++i) Settle(batch.items[i], results->results[i]);
  }

  // What the master did with one allocation's item: its stored parts acknowledged; the
  // allocation dropped once its exit is stored or the master no longer knows it.
  void Settle(const wire::AllocationOutput& item, const wire::OutputResult& result) {
    auto it = allocations_.find(item.allocation);
    if (it == allocations_.end()) return;
    Allocation& a = it->second;
    const bool ok = result.code == 200;
    if (item.logs && (ok || result.part == "reports" || result.part == "exit")) AckLines(a);
    if (item.reports && (ok || result.part == "exit")) AckReports(a);
    if (item.exit && ok) ++shared_.exits;
    if ((item.exit && ok) || result.code == 404 || result.code == 409) Drop(it);
  }

  void Generate(Allocation& a, absl::Time now) {
    std::uniform_real_distribution<double> loss(0.1, 2.0);
    for (; a.lines_due >= 1 && !a.done; a.lines_due -= 1) {
      a.lines.push_back({0, absl::StrCat("[sim] step ", a.steps, ": loss ", loss(rng_),
                                         " (a simulated trial's line of output)")});
    }
    for (; a.reports_due >= 1 && !a.done; a.reports_due -= 1) {
      wire::ReportRecord r;
      r.kind = wire::ReportKind::kTraining;
      r.time = absl::ToDoubleSeconds(now - absl::UnixEpoch());
      r.steps_completed = ++a.steps;
      r.metrics = {{"loss", loss(rng_)}, {"samples_per_second", 1000}};
      a.reports.push_back(std::move(r));
    }
    if (!a.done && now - a.started >= a.length) {
      wire::ReportRecord r;
      r.kind = wire::ReportKind::kCompleted;
      r.searcher_metric = loss(rng_);
      r.length = 100;
      a.reports.push_back(std::move(r));
      a.done = true;
    }
  }

  // Posts the allocation's lines, reports and (when done) exit; false once it is finished or
  // gone.
  bool Deliver(Allocation& a) {
    client::MasterClient& client = *a.client;
    const std::string base = absl::StrCat("/api/v1/allocations/", a.start.allocation);
    auto gone = [](const absl::Status& s) {
      return absl::IsNotFound(s) || absl::IsFailedPrecondition(s);
    };
    if (!a.lines.empty()) {
      wire::LogBatch batch{a.start.trial_id, a.lines};
      absl::Status s = Timed(shared_, "POST /allocations/{a}/logs", [&] {
                         return client.Post(base + "/logs", batch.ToJson());
                       }).status();
      if (gone(s)) return false;
      if (s.ok()) AckLines(a);
    }
    if (!a.reports.empty()) {
      const wire::ReportBatch batch = Reports(a);
      absl::Status s = Timed(shared_, "POST /allocations/{a}/reports", [&] {
                         return client.Post(base + "/reports", batch.ToJson());
                       }).status();
      if (gone(s)) return false;
      if (s.ok()) AckReports(a);
    }
    if (!a.done || !a.lines.empty() || !a.reports.empty()) return true;
    absl::Status s = Timed(shared_, "POST /allocations/{a}/exit", [&] {
                       return client.Post(base + "/exit", ExitOf(a).ToJson());
                     }).status();
    if (s.ok()) ++shared_.exits;
    if (!s.ok() && !gone(s)) a.exit_unanswered = true;
    return !s.ok() && !gone(s);
  }

  Shared& shared_;
  const std::string id_;
  std::mt19937_64 rng_;
  client::MasterClient agent_client_;  // the agent's own connection (registration, polls), kept
  std::atomic<bool> registered_{false};
  std::mutex handed_mu_;
  std::vector<wire::Action> handed_;  // --poll-seconds: what the poller brought, not yet applied
  absl::Time last_flush_ = absl::Now();
  std::map<std::string, Allocation> allocations_;
  double carried_lines_ = 0, carried_reports_ = 0;  // accrued by ended trials, not yet sent
};

absl::StatusOr<std::string> Login(const std::string& url, const std::string& data_dir) {
  COHORT_ASSIGN_OR_RETURN(std::string password,
                          cohort::ReadSecretFile(data_dir + "/admin-password"));
  client::MasterClient client(url);
  COHORT_ASSIGN_OR_RETURN(Json answer, client.Post("/api/v1/auth/login",
                                                   wire::LoginRequest{"admin", password}.ToJson()));
  return answer.value("token", "");
}

// M experiments of `trials_per_experiment` random-searcher trials, 1 slot each, no limit on
// how many run at once: the queue is what the agents cannot take yet.
absl::Status CreateExperiments(const MasterBenchOptions& o, client::MasterClient& admin,
                               const std::string& work) {
  const std::string context_dir = work + "/context";
  fs::create_directories(context_dir);
  std::ofstream(context_dir + "/noop") << "#!/bin/sh\nexit 0\n";
  fs::permissions(context_dir + "/noop", fs::perms::owner_all);
  COHORT_ASSIGN_OR_RETURN(std::string context, PackContext(context_dir, {"noop"}));
  for (int e = 0; e < o.experiments; ++e) {
    const std::string config = absl::StrCat(
        "name: load-", e, "\nentrypoint: ./noop\nhyperparameters:\n  global_batch_size: 32\n",
        "  lr: {type: double, minval: 0.001, maxval: 0.1}\n",
        "searcher: {name: random, metric: loss, max_trials: ", o.trials_per_experiment,
        ", max_concurrent_trials: 0, max_length: {batches: 100}}\nmax_restarts: 0\n");
    COHORT_RETURN_IF_ERROR(
        admin
            .PostForm("/api/v1/experiments",
                      {{"config", config, "config.yaml", "application/yaml"},
                       {"context", context, "context.tar.gz", "application/gzip"}})
            .status());
  }
  return absl::OkStatus();
}
// The value of the sample `series` (name and labels as written, e.g.
// cohort_scheduling_pass_seconds{quantile="0.99"}) in Prometheus text; NaN when absent.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      return std::strtod(std::string(line.substr(series.size() + 1)).c_str(), nullptr);
    }
  }
  return std::nan("");
}

// The value of label `name` in a Prometheus sample line (name{a="x",b="y"} value); empty when
// absent.
std::string LabelValue(absl::string_view line, absl::string_view name) {
  const std::string key = absl::StrCat(name, "=\"");
  const size_t at = line.find(key);
  if (at == line.npos) return "";
  const size_t begin = at + key.size();
  return std::string(line.substr(begin, line.find('"', begin) - begin));
}

// The master's own view of each route's latency (cohort_http_request_duration_seconds, from
// its routing to its answer): beside the agents' view, it tells time spent in a handler from
// time spent before one (the listen queue, a free server thread, the cores). Percentiles are
// the upper bounds of the histogram's buckets.
void PrintServerLatencies(const std::string& text) {
  const std::string prefix = "cohort_http_request_duration_seconds_bucket{";
  // "METHOD route": (le, count); one histogram per method and route (GET and POST /agents differ).
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t value_at = line.rfind(' ');
    const std::string route = LabelValue(line, "route"), le = LabelValue(line, "le");
    if (!absl::StartsWith(line, prefix) || value_at == line.npos || route.empty() || le.empty()) {
      continue;
    }
    const std::string key = absl::StrCat(LabelValue(line, "method"), " ", route);
    buckets[key].push_back({le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr),
                            std::strtod(std::string(line.substr(value_at + 1)).c_str(), nullptr)});
  }
  std::printf("\n%-40s %9s %11s %11s %11s\n", "route (as the master timed it)", "requests",
              "<= 5 ms", "<= 50 ms", "p99 <=");
  for (auto& [route, b] : buckets) {
    std::sort(b.begin(), b.end());
    const double total = b.back().second;
    const bool agents_route =
        absl::StrContains(route, "/agents") || absl::StrContains(route, "/allocations");
    if (total <= 0 || !agents_route) {
      continue;
    }
    auto share = [&](double le) {
      for (const auto& [bound, count] : b) {
        if (bound >= le) return 100 * count / total;
      }
      return 100.0;
    };
    double p99 = INFINITY;
    for (const auto& [bound, count] : b) {
      if (count >= 0.99 * total) {
        p99 = bound;
        break;
      }
    }
    std::printf("%-40s %9.0f %10.1f%% %10.1f%% %8.0f ms\n", route.c_str(), total, share(0.005),
                share(0.05), 1e3 * p99);
  }
}

// Acknowledged records the master no longer has: per trial, its rank-0 log lines (paged) and
// its training reports (the points of training/loss).
std::pair<int64_t, int64_t> CountLost(client::MasterClient& admin, const Acked& acked) {
  int64_t lost_lines = 0, lost_reports = 0;
  for (const auto& [trial, counts] : acked.ByTrial()) {
    int64_t lines = 0;
    for (int64_t after = 0;;) {
      absl::StatusOr<Json> page =
          admin.Get(absl::StrCat("/api/v1/trials/", trial, "/logs?rank=0&after=", after));
      if (!page.ok()) break;
      const size_t n = page->value("logs", Json::array()).size();
      lines += static_cast<int64_t>(n);
      if (n == 0) break;
      after = page->value("next", after);
    }
    int64_t reports = 0;
    if (absl::StatusOr<Json> series = admin.Get(absl::StrCat("/api/v1/trials/", trial, "/series"));
        series.ok()) {
      for (const Json& s : series->value("series", Json::array())) {
        if (s.value("name", "") == "training/loss") reports = s.value("points", int64_t{0});
      }
    }
    lost_lines += std::max<int64_t>(0, counts.first - lines);
    lost_reports += std::max<int64_t>(0, counts.second - reports);
  }
  return {lost_lines, lost_reports};
}

// Runs the load for options.seconds, killing and restarting the master halfway if asked;
// prints the rates every 5 s. Returns the master's downtime.
absl::StatusOr<absl::Duration> RunLoad(Shared& shared, MasterProcess& master) {
  const MasterBenchOptions& o = shared.options;
  const absl::Time start = absl::Now();
  absl::Duration downtime;
  bool restarted = !o.kill_restart;
  int64_t last_lines = 0, last_reports = 0;
  absl::Time last_print = start;
  while (absl::Now() - start < absl::Seconds(o.seconds)) {
    absl::SleepFor(absl::Milliseconds(100));
    if (!restarted && absl::Now() - start >= absl::Seconds(o.seconds / 2)) {
      restarted = true;
      const absl::Time killed = absl::Now();
      const int64_t running = shared.running;
      const int64_t stops = shared.stops;
      master.Kill();
      COHORT_RETURN_IF_ERROR(master.Start().status());
      downtime = absl::Now() - killed;
      std::printf(
          "master killed (SIGKILL) with %lld allocations running and restarted: down %.2f s\n",
          static_cast<long long>(running), absl::ToDoubleSeconds(downtime));
      shared.stops_before_kill = stops;
    }
    if (absl::Now() - last_print >= absl::Seconds(5)) {
      const auto [lines, reports] = shared.acked.Totals();
      const double dt = absl::ToDoubleSeconds(absl::Now() - last_print);
      std::printf(
          "t=%3.0f s  log lines %7.0f/s  metric reports %6.0f/s  allocations %5lld  "
          "output posts p99 %6.1f ms\n",
          absl::ToDoubleSeconds(absl::Now() - start), (lines - last_lines) / dt,
          (reports - last_reports) / dt, static_cast<long long>(shared.allocations),
          shared.latencies.OutputsP99(last_print, absl::Now()));
      std::fflush(stdout);
      last_lines = lines;
      last_reports = reports;
      last_print = absl::Now();
    }
  }
  return downtime;
}

// Of the trials whose allocation was told to stop after a restart because its exit had reached
// the old master unanswered: how many are not COMPLETED (their exit was lost after all).
int64_t CountNotCompleted(client::MasterClient& admin, Shared& shared) {
  std::lock_guard<std::mutex> lock(shared.mu);
  int64_t not_completed = 0;
  for (int64_t trial : shared.trials_stopped_after_exit) {
    absl::StatusOr<Json> got = admin.Get(absl::StrCat("/api/v1/trials/", trial));
    if (!got.ok() || got->value("state", "") != "COMPLETED") ++not_completed;
  }
  return not_completed;
}

// What one run measured, for the side-by-side table of several databases.
struct MasterBenchResult {
  double pass_p50_ms = 0, pass_p99_ms = 0;
  double outputs_p99_ms = 0;  // the output posts begun after the warm-up
  double lines_per_second = 0, reports_per_second = 0;
  int64_t lost_lines = 0, lost_reports = 0;
  double master_cpu_seconds = 0;
  double database_mb = 0;
};

// What the run measured: the master's own figures (from `metrics`, its /metrics text), the
// agents' and what the restart lost.
MasterBenchResult Summarize(const Shared& shared, const std::string& metrics, double seconds,
                            std::pair<int64_t, int64_t> lost) {
  const auto [lines, reports] = shared.acked.Totals();
  MasterBenchResult result;
  result.pass_p50_ms = 1e3 * Sample(metrics, "cohort_scheduling_pass_seconds{quantile=\"0.5\"}");
  result.pass_p99_ms = 1e3 * Sample(metrics, "cohort_scheduling_pass_seconds{quantile=\"0.99\"}");
  result.outputs_p99_ms = shared.latencies.OutputsP99(
      shared.load_start + absl::Seconds(shared.options.warmup_seconds), absl::InfiniteFuture());
  result.lines_per_second = static_cast<double>(lines) / seconds;
  result.reports_per_second = static_cast<double>(reports) / seconds;
  result.lost_lines = lost.first;
  result.lost_reports = lost.second;
  result.database_mb = Sample(metrics, "cohort_database_size_bytes") / 1e6;
  return result;
}

void PrintSummary(const Shared& shared, const std::string& metrics, const MasterBenchResult& r) {
  const auto [lines, reports] = shared.acked.Totals();
  const double warmup = shared.options.warmup_seconds;
  shared.latencies.Print(shared.load_start + absl::Seconds(warmup), warmup);
  PrintServerLatencies(metrics);
  std::printf("\nscheduling passes: %.0f, p50 %.2f ms, p99 %.2f ms, max %.2f ms (last 1000)\n",
              Sample(metrics, "cohort_scheduling_passes_total"), r.pass_p50_ms, r.pass_p99_ms,
              1e3 * Sample(metrics, "cohort_scheduling_pass_seconds{quantile=\"1\"}"));
  std::printf(
      "  longest hold of the master's lock per pass: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
      1e3 * Sample(metrics, "cohort_scheduling_pass_lock_seconds{quantile=\"0.5\"}"),
      1e3 * Sample(metrics, "cohort_scheduling_pass_lock_seconds{quantile=\"0.99\"}"),
      1e3 * Sample(metrics, "cohort_scheduling_pass_lock_seconds{quantile=\"1\"}"));
  std::printf(
      "stop actions after the restart: %lld (allocations not re-adopted); more for allocations "
      "whose exit the old master took unanswered: %lld, for starts it had not delivered: %lld\n"
      "trials ERROR: %.0f, QUEUED: %.0f, RUNNING: %.0f, COMPLETED: %.0f\n",
      static_cast<long long>(shared.stops - shared.stops_before_kill),
      static_cast<long long>(shared.stops_after_exit.load()),
      static_cast<long long>(shared.stops_unknown.load()),
      Sample(metrics, "cohort_trials{state=\"ERROR\"}"),
      Sample(metrics, "cohort_trials{state=\"QUEUED\"}"),
      Sample(metrics, "cohort_trials{state=\"RUNNING\"}"),
      Sample(metrics, "cohort_trials{state=\"COMPLETED\"}"));
  std::printf(
      "acknowledged: %lld log lines (%.0f/s), %lld metric reports (%.0f/s); "
      "allocations started %lld, exited %lld\n",
      static_cast<long long>(lines), r.lines_per_second, static_cast<long long>(reports),
      r.reports_per_second, static_cast<long long>(shared.allocations.load()),
      static_cast<long long>(shared.exits.load()));
  std::printf("database: %.1f MB\n", r.database_mb);
  std::printf(
      "lost after the restart: %lld log lines, %lld metric reports (acknowledged, not "
      "stored)\n",
      static_cast<long long>(r.lost_lines), static_cast<long long>(r.lost_reports));
}

absl::StatusOr<MasterBenchResult> RunMasterBench(const MasterBenchOptions& o) {
  // $TMPDIR (else /tmp) holds the master's data directory: its disk is part of what is measured.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp",
                                  "/cohort-master-bench-XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot make a directory ", tmpl, ": ",
                                               std::strerror(errno), " (set TMPDIR)"));
  }
  const std::string work = tmpl;
  MasterProcess master(o.master.empty() ? SiblingProgram("cohort-master") : o.master,
                       work + "/master", o.master_args);
  fs::create_directories(work + "/master");
  COHORT_ASSIGN_OR_RETURN(std::string url, master.Start());
  COHORT_ASSIGN_OR_RETURN(std::string token, Login(url, work + "/master"));
  client::MasterClient admin(url, absl::Seconds(120));
  admin.set_bearer_token(token);
  std::printf("master %s (data in %s); %d experiments of %d trials...\n", url.c_str(), work.c_str(),
              o.experiments, o.trials_per_experiment);
  COHORT_RETURN_IF_ERROR(CreateExperiments(o, admin, work));
  COHORT_ASSIGN_OR_RETURN(std::string secret,
                          cohort::ReadSecretFile(work + "/master/agent-secret"));
  Shared shared{.options = o, .url = url, .secret = secret};
  std::vector<std::thread> threads;
  for (int i = 0; i < o.agents; ++i) {
    threads.emplace_back([&shared, i] {
      // Per thread on Linux: the master (started and restarted by this thread) keeps its own.
      const int nice = shared.options.agents_nice;
      if (nice != 0 && ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
        std::fprintf(stderr, "agent %d: setpriority: %s\n", i, std::strerror(errno));
      }
      SimAgent(i, shared).Run();
    });
  }
  std::printf("%d agents of %d slots running for %.0f s\n", o.agents, o.slots, o.seconds);
  const std::optional<MachineCpu> cpu_before = ReadMachineCpu();
  const double master_cpu_before = master.CpuSeconds();
  absl::StatusOr<absl::Duration> load = RunLoad(shared, master);
  const std::optional<MachineCpu> cpu_after = ReadMachineCpu();
  const double master_cpu = master.CpuSeconds() - master_cpu_before;
  shared.stop = true;
  for (std::thread& t : threads) t.join();
  COHORT_RETURN_IF_ERROR(load.status());
  if (cpu_before && cpu_after) {
    // A virtual machine's neighbours: runs with seconds stolen are not comparable with runs
    // without (the 200-agent latencies' p99 doubles).
    std::printf("CPU time the hypervisor gave to others during the load (steal): %.1f s\n",
                cpu_after->steal - cpu_before->steal);
  }
  // Not stolen time: what the master's work cost, comparable across runs that steal differs.
  const size_t requests = shared.latencies.Count();
  std::printf(
      "the master's CPU during the load: %.1f s (%.0f%% of a core), %.0f us per request "
      "(%zu requests)\n",
      master_cpu, 100 * master_cpu / o.seconds,
      requests > 0 ? 1e6 * master_cpu / static_cast<double>(requests) : 0.0, requests);
  COHORT_ASSIGN_OR_RETURN(std::string metrics, admin.GetBytes("/metrics"));
  MasterBenchResult result = Summarize(shared, metrics, o.seconds, CountLost(admin, shared.acked));
  result.master_cpu_seconds = master_cpu;
  PrintSummary(shared, metrics, result);
  if (!shared.trials_stopped_after_exit.empty()) {
    std::printf("of the trials whose exit the old master took unanswered, not COMPLETED: %lld\n",
                static_cast<long long>(CountNotCompleted(admin, shared)));
  }
  master.Kill();
  std::error_code ec;
  fs::remove_all(work, ec);
  return result;
}

}  // namespace

CLI::App* AddMasterCommand(CLI::App& app, MasterBenchOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "master", "cohort-master under the load of simulated agents (no launcher needed)");
  cmd->add_option("--agents", o.agents, "Simulated agents")->capture_default_str();
  cmd->add_option("--slots", o.slots, "Slots per agent")->capture_default_str();
  cmd->add_option("--experiments", o.experiments, "Experiments submitted")->capture_default_str();
  cmd->add_option("--trials-per-experiment", o.trials_per_experiment,
                  "Trials of each (random searcher, 1 slot each)")
      ->capture_default_str();
  cmd->add_option("--trial-seconds", o.trial_seconds, "How long a simulated trial runs")
      ->capture_default_str();
  cmd->add_option("--trial-seconds-jitter", o.trial_seconds_jitter,
                  "Each trial runs trial-seconds x (1 +- up to this fraction): 0 starts and ends "
                  "all of the first wave's trials together, in waves")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  cmd->add_option("--log-lines-per-second", o.log_lines_per_second,
                  "Log lines all running trials send together")
      ->capture_default_str();
  cmd->add_option("--metric-reports-per-second", o.metric_reports_per_second,
                  "Training metric reports all running trials send together")
      ->capture_default_str();
  cmd->add_option("--seconds", o.seconds, "How long the load runs")->capture_default_str();
  cmd->add_option("--flush-ms", o.flush_ms, "How often each agent posts")->capture_default_str();
  cmd->add_option("--warmup-seconds", o.warmup_seconds,
                  "Latencies are also shown for the requests begun after this (the start's "
                  "burst of registrations and placements excluded)")
      ->capture_default_str();
  cmd->add_flag("!--no-kill-restart", o.kill_restart,
                "Do not SIGKILL and restart the master halfway");
  cmd->add_option("--master", o.master, "cohort-master (default: beside cohort-bench)");
  cmd->add_option("--databases", o.databases,
                  "The master's databases, one run each, then a table side by side: sqlite, "
                  "postgresql (a throwaway server this benchmark starts; scripts/install.sh "
                  "--test installs PostgreSQL), comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"sqlite", "postgresql"}))
      ->capture_default_str();
  cmd->add_flag("!--per-allocation-posts", o.agent_wide_posts,
                "Each allocation posts its logs, reports and exit on its own (the protocol of "
                "the tables before the sixth) instead of each agent posting all its allocations' "
                "output in one request per flush (POST /agents/{id}/outputs), as cohort-agent "
                "does");
  cmd->add_option("--poll-seconds", o.poll_seconds,
                  "Each agent long-polls on a thread of its own for up to this long, as "
                  "cohort-agent does; 0: one poll of --flush-ms per flush, the protocol of the "
                  "tables before the sixth")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  cmd->add_option("--agents-nice", o.agents_nice,
                  "Nice value of the simulated agents' threads (0-19): they stand in for other "
                  "machines, so with 19 they take the cores only when the master leaves them idle")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  cmd->add_option("--master-arg", o.master_args,
                  "A flag for cohort-master (repeat it; e.g. --master-arg=--concurrent-handlers=4)")
      ->allow_extra_args(false);
  cmd->footer(
      "Example (the issue's target scale, trials ending spread out, the agents yielding the cores "
      "to the master as other machines would; docs/performance.md):\n  cohort-bench master "
      "--agents 200 --slots 8 --experiments 100 --trials-per-experiment 100 --seconds 40 \\\n"
      "    --trial-seconds-jitter 0.5 --agents-nice 19\n"
      "SQLite and PostgreSQL side by side: add --databases sqlite,postgresql");
  return cmd;
}

// The runs' results side by side, and the last database's ratio to the first's.
void PrintSideBySide(const std::vector<std::pair<std::string, MasterBenchResult>>& runs) {
  if (runs.size() < 2) return;
  std::printf("\n%-44s", "side by side");
  for (const auto& [name, r] : runs) std::printf(" %12s", name.c_str());
  std::printf(" %9s\n", "ratio");
  auto row = [&](const char* what, auto field) {
    std::printf("%-44s", what);
    for (const auto& [name, r] : runs) std::printf(" %12.1f", static_cast<double>(field(r)));
    const double first = static_cast<double>(field(runs.front().second));
    const double last = static_cast<double>(field(runs.back().second));
    std::printf(" %9s\n", first > 0 ? absl::StrFormat("%.2fx", last / first).c_str() : "-");
  };
  row("scheduling pass p50 (ms)", [](const MasterBenchResult& r) { return r.pass_p50_ms; });
  row("scheduling pass p99 (ms)", [](const MasterBenchResult& r) { return r.pass_p99_ms; });
  row("output posts p99 after the warm-up (ms)",
      [](const MasterBenchResult& r) { return r.outputs_p99_ms; });
  row("log lines acknowledged per second",
      [](const MasterBenchResult& r) { return r.lines_per_second; });
  row("metric reports acknowledged per second",
      [](const MasterBenchResult& r) { return r.reports_per_second; });
  row("lost over the SIGKILL: log lines", [](const MasterBenchResult& r) { return r.lost_lines; });
  row("lost over the SIGKILL: metric reports",
      [](const MasterBenchResult& r) { return r.lost_reports; });
  row("the master's CPU (s; PostgreSQL's own not in it)",
      [](const MasterBenchResult& r) { return r.master_cpu_seconds; });
  row("database size (MB)", [](const MasterBenchResult& r) { return r.database_mb; });
}

// One run on `database`: SQLite in the master's data directory, or a throwaway PostgreSQL
// server started for the run (Debian's postgresql: scripts/install.sh --test installs it).
absl::StatusOr<MasterBenchResult> RunOn(const std::string& database,
                                        const MasterBenchOptions& options) {
  std::printf("\n=== cohort-master on %s ===\n", database.c_str());
  if (database == "sqlite") return RunMasterBench(options);
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<master::db_testing::PostgresServer> server,
                          master::db_testing::PostgresServer::Start());
  COHORT_ASSIGN_OR_RETURN(std::string url, server->CreateDatabase("bench"));
  MasterBenchOptions on_postgres = options;
  on_postgres.master_args.push_back("--db=" + url);
  return RunMasterBench(on_postgres);
}

int RunMasterCommand(const MasterBenchOptions& options) {
  std::vector<std::pair<std::string, MasterBenchResult>> runs;
  for (const std::string& database : options.databases) {
    absl::StatusOr<MasterBenchResult> result = RunOn(database, options);
    if (!result.ok()) {
      std::fprintf(stderr, "cohort-bench master: on %s: %s\n", database.c_str(),
                   std::string(result.status().message()).c_str());
      return 1;
    }
    runs.emplace_back(database, *result);
  }
  PrintSideBySide(runs);
  return 0;
}
}  // namespace cohort::bench
