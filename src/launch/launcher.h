#pragma once
// Launcher: the engine of cohort-launch. Starts this machine's share of a job's workers with the
// worker environment of docs/architecture.md §3 (COHORT_RANK, COHORT_SIZE, COHORT_LOCAL_*,
// COHORT_CROSS_*, COHORT_CHIEF_ADDR, COHORT_RENDEZVOUS_PORT, thread counts; with GPU slots
// CUDA_VISIBLE_DEVICES, one GPU per worker), prefixes every
// line they write with "[rank=K] ", and supervises them fail-fast:
//
//   * a worker that exits non-zero or dies of a signal stops the job: the other workers get
//     SIGTERM, then SIGKILL after the grace period, and Run returns that worker's status
//     (its exit code, or 128 + signal);
//   * SIGINT/SIGTERM to the launcher are forwarded to every worker (same grace, then SIGKILL);
//     a second one kills at once; Run then returns 128 + that signal;
//   * all workers exit 0: Run returns 0.
//
// Node 0's launcher hosts the job's rendezvous store (comm::TcpStoreServer), so the store
// outlives any worker. With several nodes, the launchers also talk to each other through it:
// the first launcher that sees a failure sets an abort key that stops every node's workers, and
// node 0 keeps the store up after its own workers end until every node has reported its exit
// status (or `node_exit_timeout` passes).
//
// Each worker runs in its own process group (a stop reaches the worker's children too) and
// gets PR_SET_PDEATHSIG = SIGKILL, so workers die with the launcher even if it is SIGKILLed.
// Worker stdin is /dev/null.
//
// Thread-safety: Run is called once, from the thread that created the Launcher (the
// parent-death signal is tied to that thread). RequestStop may be called from any thread or a
// signal handler. Only one Launcher per process may have `handle_signals` set at a time.
//
// Example:
//   LaunchOptions options;
//   options.slots = 2;
//   options.command = {"./my_trial", "--epochs", "3"};
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Launcher> launcher, Launcher::Create(options));
//   int exit_status = launcher->Run();

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "comm/tcp_store.h"

namespace cohort::launch {

// Rendezvous port used when --chief-addr names no port.
inline constexpr int kDefaultRendezvousPort = 29400;

struct LaunchOptions {
  // Workers on this machine (>= 1).
  int slots = 1;
  // Machines in the job, and this machine's index (0 <= node_rank < nnodes).
  int nnodes = 1;
  int node_rank = 0;
  // Host of node 0, where the rendezvous store listens. Empty: 127.0.0.1 (single node only).
  std::string chief_host;
  // Store port. -1: kDefaultRendezvousPort when chief_host is set or nnodes > 1, else 0.
  // 0: node 0 picks a free port (announced on stderr); not allowed on other nodes.
  int rendezvous_port = -1;
  // Time between SIGTERM and SIGKILL when stopping workers.
  absl::Duration grace_period = absl::Seconds(3);
  // Multi-node: how long a node waits to reach node 0's store, and how long node 0 waits
  // for the other nodes to report their exit after its own workers ended.
  absl::Duration connect_timeout = absl::Seconds(120);
  absl::Duration node_exit_timeout = absl::Seconds(60);
  // Multi-node: names this job's store. Node 0 writes it there; the other nodes take only a
  // store that holds it, and wait (within connect_timeout) while the port answers with another
  // (an earlier job's launcher, still stopping, may hold it). Empty: any store.
  std::string job_id;
  // The worker command: program (a path, or a name looked up in PATH) and its arguments.
  std::vector<std::string> command;
  // Cores to share among the workers; 0: the CPUs this process may run on (sched_getaffinity).
  int cores = 0;
  // GPU slots: one distinct GPU id per slot; the worker of local rank i gets
  // CUDA_VISIBLE_DEVICES=gpus[i] (its GPU is then its device 0). Empty: CPU slots, and
  // CUDA_VISIBLE_DEVICES passes through from the launcher's environment.
  std::vector<int> gpus;
  // Where the prefixed worker output and the launcher's own messages go. Not owned.
  int stdout_fd = STDOUT_FILENO;
  int stderr_fd = STDERR_FILENO;
  // Install SIGINT/SIGTERM handlers that forward to the workers (cohort-launch does; tests
  // that run a Launcher in-process use RequestStop instead).
  bool handle_signals = true;
};

class Launcher {
 public:
  // Validates `options` and prepares the job: resolves the command, hosts the rendezvous store
  // (node 0) or connects to node 0's (other nodes, within connect_timeout). Errors:
  //   InvalidArgument  bad option values (message names the flag and the fix);
  //   NotFound / PermissionDenied  the command is missing or not executable;
  //   Unavailable / DeadlineExceeded  the store could not be hosted or reached.
  static absl::StatusOr<std::unique_ptr<Launcher>> Create(LaunchOptions options);

  // Kills (SIGKILL) any worker still running and releases the store.
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Starts the workers, relays their output, and returns the job's exit status (see the file
  // comment). A worker that cannot be started counts as a failed worker (status 127 or 1).
  int Run();

  // Stops the workers as if the launcher had received `signal` (SIGINT or SIGTERM).
  // Async-signal-safe and thread-safe.
  void RequestStop(int signal);

  // Port of the rendezvous store (the bound port on node 0).
  int rendezvous_port() const { return port_; }
  // The resolved path of the worker program.
  const std::string& executable() const { return executable_; }
  // Threads each worker gets (OMP_NUM_THREADS etc., unless the user set them).
  int threads_per_worker() const { return threads_per_worker_; }

 private:
  explicit Launcher(LaunchOptions options) : options_(std::move(options)) {}
  absl::Status Prepare();
  absl::Status SetUpStore();
  // Multi-node: connects to the store at `address`, node 0 writing options_.job_id there, the
  // others retrying until it holds options_.job_id (see LaunchOptions::job_id).
  absl::StatusOr<std::unique_ptr<comm::TcpStore>> ConnectToJobStore(const net::HostPort& address);
  std::vector<std::string> WorkerEnvironment(int local_rank) const;
  void Message(const std::string& text) const;

  // Run's steps. RunState (launcher.cc) holds the workers and how far stopping them has got.
  struct RunState;
  // Forks one worker per slot; a worker that cannot be started begins the stop (status 1).
  void StartWorkers(RunState& run);
  // Waits (at most 50 ms, less when the kill deadline is nearer) for worker output or a wake
  // byte, relays the output and acts on the wake bytes (HandleWakeBytes).
  void PollAndRelay(RunState& run);
  // A signal begins the stop (a second one kills at once); another node's abort stops ours.
  void HandleWakeBytes(RunState& run);
  // Reaps exited workers; the first failure begins the stop and tells the other nodes.
  void ReapExitedWorkers(RunState& run);
  // SIGKILL to the workers still running once the grace period after the stop has passed.
  void KillAfterGracePeriod(RunState& run);
  // Sets the job's exit status, sends `signal` to every worker (SIGKILL after the grace
  // period), prints `why` when non-empty and, when `abort_notice` is non-empty ("<status>
  // <what happened>"), tells the other nodes through the store.
  void BeginStop(RunState& run, int status, int signal, const std::string& why,
                 const std::string& abort_notice);
  // Sends `signal` to every running worker, after printing `why` when non-empty.
  void StopAll(RunState& run, int signal, const std::string& why);
  // Multi-node: reports this node's status to the store; node 0 waits for the others.
  int FinishNodes(int status);

  LaunchOptions options_;
  std::string executable_;
  std::string chief_host_;
  int port_ = 0;
  int threads_per_worker_ = 1;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  std::unique_ptr<comm::TcpStoreServer> server_;
  std::unique_ptr<comm::TcpStore> store_;  // multi-node: this launcher's client
  std::unique_ptr<comm::FailureWatcher> abort_watcher_;
  std::mutex abort_mu_;
  std::string abort_notice_;  // guarded by abort_mu_
  std::vector<pid_t> pids_;   // started workers not yet reaped
};

}  // namespace cohort::launch
