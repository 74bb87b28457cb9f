#pragma once
// AllocationRun: this agent's node of one allocation, from the master's start action to the
// exit report. It downloads and unpacks the experiment's context, starts cohort-launch with the
// worker environment (wire::WorkerEnv), streams every output line with its rank to the master
// (wire::LogBatch) and, on node 0, the trial's metrics.jsonl records and progress.json
// (wire::ReportBatch), and finally reports the launcher's exit status (wire::ExitReport).
// A node that cannot start (no context, a bad config, a start action that did not parse) logs
// why to the trial and exits 1. When the config enables profiling, a sampler measures this
// machine (sampler/system_sampler.h) while the launcher runs, and its records go out with the
// report batches of every node (the master keeps those inside the profiling window), with the
// step timelines its ranks write (run/profile/rank-<R>.jsonl, wire/step_profile.h).
//
// AllocationControl is how the agent's poll thread stops a running node: preempt sends the
// launcher SIGTERM (the trial checkpoints), kill adds SIGKILL after a grace period.
// Time: flush intervals and the kill's grace are measured by the agent's Clock; the launcher's
// pipe is read in real time.
//
// Thread-safety: Run() on the allocation's own thread; AllocationControl is shared with the
// poll thread and locks itself.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "agent/output_shipper.h"
#include "agent/stall_watch.h"
#include "client/master_client.h"
#include "common/clock.h"
#include "common/json_lines_tail.h"
#include "common/line_splitter.h"
#include "common/subprocess.h"
#include "sampler/system_sampler.h"
#include "wire/agent_protocol.h"

namespace cohort::agent {

class AllocationControl {
 public:
  // `clock` (which must outlive this) times the kill's grace.
  explicit AllocationControl(const Clock& clock = RealClock()) : clock_(clock) {}
  // Stops the node: SIGTERM now, or as soon as the launcher starts; kill: SIGKILL
  // `kill_grace` later if it has not exited by then. The first mode asked for stays, and only
  // the first call signals: cohort-launch takes a second SIGTERM as "kill the workers now",
  // which would cut a checkpoint short (a kill after a preempt only brings the SIGKILL nearer).
  void Stop(wire::StopMode mode, absl::Duration kill_grace) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether Stop was called.
  bool stopping() ABSL_LOCKS_EXCLUDED(mu_);
  // The launcher started (`child`; it gets its SIGTERM now if Stop came first) or, nullptr,
  // exited. The child must outlive its attachment.
  void Attach(Subprocess* child) ABSL_LOCKS_EXCLUDED(mu_);
  // SIGKILLs the attached launcher if a kill's grace has passed.
  void KillIfDue() ABSL_LOCKS_EXCLUDED(mu_);
  // What the agent's registration says of this node: `node` as set at its start, with what the
  // run holds for the master now (its log lines and report batches not delivered yet).
  void Describe(wire::RunningAllocation node) ABSL_LOCKS_EXCLUDED(mu_);
  wire::RunningAllocation Claim() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class AllocationRun;  // SetHeld
  void SetHeld(int64_t lines, int64_t report_batches) ABSL_LOCKS_EXCLUDED(mu_);

  const Clock& clock_;
  Mutex mu_;
  wire::RunningAllocation node_ ABSL_GUARDED_BY(mu_);
  // While the launcher runs. The pointer is guarded, not the Subprocess: the run's thread reads
  // and polls it without mu_, while Stop (the poll thread) calls its Signal under mu_. Signal
  // reads the status_ that Poll writes, which mu_ does not cover (Subprocess is one thread's).
  Subprocess* child_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::optional<wire::StopMode> mode_ ABSL_GUARDED_BY(mu_);
  absl::Time kill_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
};

struct AllocationRunOptions {
  std::string master_url;
  std::string secret;       // the cluster's agent secret (AgentOptions::secret)
  std::string tls_ca_file;  // AgentOptions::tls_ca_file
  std::string agent_id;
  std::string launcher;  // cohort-launch
  std::string work_dir;  // the allocation gets <work_dir>/alloc-<id>/
  int threads_per_worker = 1;
  // This node's GPU slots, one per slot, given to the launcher as --gpus; empty: CPU slots.
  std::vector<int> gpus;
  // Run calls it once the launcher has exited (its workers are gone), before the exit is
  // reported: the agent frees the GPUs there, so the next allocation the master places on
  // them after the exit finds them free. Null: nothing.
  std::function<void()> on_launcher_exit;
  absl::Duration kill_grace = absl::Seconds(10);
  // What flush intervals, the kill's deadline and retries are read by; null: RealClock().
  // Must outlive the run (and be the clock the AllocationControl was made with).
  const Clock* clock = nullptr;
  // The agent's shutdown: once notified, posts to the master are tried once, not retried for
  // up to 10 minutes. Null: never. Must outlive the run.
  const absl::Notification* stop = nullptr;
  // The agent's one post for all its allocations' output (output_shipper.h); null, or a master
  // without that route: the run posts to its allocation's own routes. Must outlive the run.
  OutputShipper* shipper = nullptr;
  // The run flushes at flush_phase + k * 500 ms of its clock: an agent's runs flush together
  // (and share a post), different agents' at different moments.
  absl::Duration flush_phase = absl::ZeroDuration();
  // A rank that has waited in a collective, or been stopped, this long fails the run
  // (stall_watch.h; cohort-agent --progress-deadline); its note shows from min(60 s, half).
  absl::Duration progress_deadline = absl::Minutes(10);
  // Set when what hosts the node (a Slurm job: its time limit, an operator's scancel) ends it,
  // not the master: a launcher exit of 0 after it is reported as 143 with `host_ended_note` in
  // the trial's log, so the master counts a failed run (and restarts it from its checkpoint)
  // rather than a finished trial. Null: never. Must outlive the run.
  const std::atomic<bool>* host_ended = nullptr;
  std::string host_ended_note;
};

class AllocationRun {
 public:
  AllocationRun(AllocationRunOptions options, wire::StartAction action,
                std::shared_ptr<AllocationControl> control);

  // Runs the node to its end and reports its exit to the master (retrying while the master is
  // away, up to 10 minutes; once the agent stops, one try). What the master did not take for
  // want of an answer (the exit, the log lines left) is kept in the work directory for the
  // agent's next run (undelivered.h). Returns the launcher's exit status (1 when it never
  // started).
  int Run();
  // Reports this node failed without starting it, for a start action the agent could not
  // parse but whose allocation and node it could read: `why` goes to the trial's log (when
  // the action's trial_id was readable, i.e. non-zero), then the exit with status 1, so the
  // master's restart policy applies.
  void Fail(const std::string& why);

 private:
  // Downloads and unpacks the context, writes config.yaml and returns how to start the
  // launcher. Errors say what failed, for the trial's log.
  absl::StatusOr<SubprocessOptions> Prepare();
  // Downloads the context and unpacks it into dir/context with ExtractContext (its safety rules
  // and limits); an unsafe or invalid archive is an error naming the entry, for the trial's log.
  absl::Status UnpackContext();
  // The launcher's environment: the config's environment_variables, then the WorkerEnv.
  std::map<std::string, std::optional<std::string>> LaunchEnv(
      const std::map<std::string, std::string>& config_env) const;
  // Starts the launcher and streams its output until it exits; returns its exit status.
  int StreamUntilExit(const SubprocessOptions& launch);
  // Multi-node, node 0: the master chose the rendezvous store's port from this agent's range.
  // While a process of an earlier allocation of this agent (still stopping) holds it, waits for
  // it (at most 75 s, said in the trial's log); anything else holding it is left to the
  // launcher, whose error names the port and its holder. The other nodes' launchers take only
  // this allocation's store (--job-id), so they wait too.
  void WaitForChiefPort();
  // One line of the launcher's output ("[rank=N] text" or its own) to the trial's log.
  void LogOutputLine(absl::string_view line);
  // After the launcher's exit: its last partial line, the stragglers stopped, and how many
  // lines were cut.
  void EndOutput(LineSplitter& lines);
  // SIGKILLs what the trial left running once its launcher is gone (processes started by its
  // workers in the background), found by the allocation's marker (leftovers.h).
  void StopStragglers();
  // Sends the logs and reports gathered so far; stops the node when the master forgot it.
  // `last`: the launcher has exited and its output is closed: every report left goes now.
  void Flush(bool last);
  void Log(int rank, std::string line);
  // Queues the line counting the output lines dropped while the buffer was full, if any were.
  void AddDropMarker();
  void FlushLogs();
  // Posts pending_logs_[begin, end); a batch the master refuses (4xx) is split in halves and
  // each posted again, down to the line it will not take, which alone is dropped (and logged).
  // False when the master is away and this is not a patient flush: those lines stay pending.
  bool PostLogs(size_t begin, size_t end);
  // Posts what is new in the reports; true when more metrics.jsonl records may be waiting (it
  // read kRecordsPerFlush of them).
  bool PostReports();
  // Once a second: judges the ranks' progress beats (stall_watch.h); a new note goes to the
  // trial's log and, with the next report batch, to the master; past the deadline the run is
  // stopped (and so fails, to be restarted within max_restarts).
  void WatchProgress();
  std::vector<RankState> ReadRankStates() const;
  // Queues `batch` after those the master missed and posts the queue in order, stopping (the
  // rest kept, at most kMaxPendingBytes of it) when the master is away.
  void PostReportBatch(wire::ReportBatch batch);
  // Posts one batch; false when the master is away and this is not a patient flush.
  bool TryReportBatch(const wire::ReportBatch& batch, size_t bytes);
  static size_t RecordBytesOf(const wire::ReportBatch& batch);
  // Notes that the master did not answer: flushes back off (1 s doubling to 8 s).
  void MasterAway(const absl::Status& why);
  // Profiling: starts measuring this machine (a sampler thread collecting records), and stops.
  void StartSampler();
  void StopSampler();
  std::vector<wire::SystemMetricsRecord> TakeSystemRecords() ABSL_LOCKS_EXCLUDED(system_mu_);
  // Profiling: the new lines of this node's ranks' profile/rank-<R>.jsonl files; a line that
  // does not parse is dropped, the first of each file logged.
  std::vector<wire::StepProfileRecord> NewStepProfiles();
  // The new metrics.jsonl records (at most kRecordsPerFlush), those that do not parse and those
  // longer than JsonLinesTail::kDefaultMaxLineBytes logged and dropped.
  std::vector<wire::ReportRecord> NewRecords();
  std::optional<wire::ProgressRecord> ReadProgress();
  // Posts the exit report; Unavailable when the master did not answer (patiently, or once when
  // the agent stops), any other error its answer.
  absl::Status ReportExit(int status);
  // Keeps the exit and the log lines left for the agent's next run (undelivered.h).
  void KeepUndelivered(int status);
  std::string Prefix() const;           // "agent A: allocation X"
  wire::AllocationOutput Item() const;  // this allocation's, with its token and no parts yet
  // Sends one part of this node's output (`item` holds one of logs, reports, exit; about
  // `bytes` of JSON) through the agent's shipper, else to the allocation's own route: once
  // while the trial runs (Unavailable: the master is away, MasterAway), patiently after it
  // (RetryWhileUnavailable, stopping with the agent). Returns the answer's Status.
  absl::Status Send(const wire::AllocationOutput& item, size_t bytes);
  // Posts `item` to the allocation's own route for its part, once.
  absl::Status PostOwn(const wire::AllocationOutput& item);

  // The members are the run's thread's alone (Run or Fail), so unguarded, but for
  // system_records_ (system_mu_) and options_, which the sampler's thread reads too (unchanged
  // after the constructor).
  AllocationRunOptions options_;
  const Clock& clock_;
  const absl::Notification& stop_;
  wire::StartAction action_;
  std::shared_ptr<AllocationControl> control_;
  std::string dir_;
  client::MasterClient client_;  // presents the allocation's token
  std::vector<wire::LogLine> pending_logs_;
  size_t pending_log_bytes_ = 0;  // their JSON's size, at most about kMaxPendingBytes
  uint64_t dropped_logs_ = 0;     // lines dropped since the buffer filled, for the marker
  std::string away_reason_;       // why the last post failed (MasterAway), for the marker
  struct UnsentReports {
    wire::ReportBatch batch;
    size_t bytes = 0;  // of its JSON
  };
  std::deque<UnsentReports> unsent_reports_;  // the master was away; in order
  size_t unsent_bytes_ = 0;
  // Posts are tried once (false) during the run, patiently after it and at its end.
  bool patient_ = true;
  absl::Time away_until_ = absl::InfinitePast();  // no flush before, the master was away
  absl::Duration away_backoff_ = absl::ZeroDuration();
  bool master_forgot_ = false;  // the master answered NotFound: the allocation is gone there
  JsonLinesTail metrics_;
  int64_t records_seen_ = 0;
  std::string last_progress_error_;
  bool reports_refused_ = false;  // logged once
  bool profiling_ = false;        // the config's profiling.enabled
  Mutex system_mu_;
  // The sampler's thread adds to it (StartSampler's callback); the run's thread takes them.
  std::vector<wire::SystemMetricsRecord> system_records_ ABSL_GUARDED_BY(system_mu_);
  std::map<std::string, JsonLinesTail> step_profile_tails_;  // by file name
  std::set<std::string> step_profile_errors_;                // files whose bad line was logged
  absl::Time next_progress_check_ = absl::InfinitePast();     // WatchProgress, real time
  std::string stall_note_;                                    // the last note judged
  std::optional<std::string> unsent_stall_;                   // for the next report batch
  bool stopped_for_stall_ = false;
  // Last: destroyed first, so its thread stops before the records it adds to go away.
  std::unique_ptr<sampler::SystemSampler> sampler_;
};

}  // namespace cohort::agent
