// cohort-agent: runs trials on this machine for a cohort-master.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent.h"
#include "agent/leftovers.h"
#include "client/local_cluster.h"
#include "client/master_client.h"
#include "cohort/status.h"
#include "common/command_line.h"
#include "common/private_file.h"
#include "common/subprocess.h"
#include "wire/launch_env.h"

namespace {

// How long SIGTERM may take: the promise is 10 s (docs/reliability.md). The trials' grace (5 s)
// and a reachable master's last posts fit well inside it.
constexpr absl::Duration kHardStop = absl::Seconds(8);

// SIGINT and SIGTERM stop the agent. They are blocked in every thread (trials get an unblocked
// mask from Subprocess) and taken by this thread with sigwait, because Agent::Stop() locks and
// wakes sleepers, which a signal handler may not do. A stop that has not ended `hard_stop` after
// the signal (a master that accepts connections but does not answer holds a poll or a last post
// for up to its read timeout) ends the process: `on_hard_stop` stops the trials' processes, then
// the process exits with status 1.
class SignalStopper {
 public:
  // Call before any other thread starts, so they all inherit the blocked mask.
  static sigset_t BlockStopSignals() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
  }
  SignalStopper(sigset_t signals, cohort::agent::Agent& agent, absl::Duration hard_stop,
                std::function<void()> on_hard_stop)
      : signals_(signals), thread_([this, &agent, hard_stop, on_hard_stop] {
          int signal = 0;
          if (sigwait(&signals_, &signal) != 0 || done_) return;
          agent.Stop();
          const absl::Time deadline = absl::Now() + hard_stop;
          while (!done_) {
            const timespec left =
                absl::ToTimespec(std::max(absl::ZeroDuration(), deadline - absl::Now()));
            if (sigtimedwait(&signals_, nullptr, &left) >= 0 || errno != EAGAIN) continue;
            if (done_) return;
            on_hard_stop();
            std::_Exit(1);
          }
        }) {}
  ~SignalStopper() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGTERM);  // blocked, so it ends the wait only
    thread_.join();
  }

 private:
  sigset_t signals_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// The ids of this machine's GPUs through nvidia-smi ("GPU 0: NVIDIA H100 ... (UUID: ...)"),
// when it is there; none otherwise.
std::vector<int> ListGpus() {
  auto child = cohort::Subprocess::Start({.argv = {"nvidia-smi", "--list-gpus"}});
  if (!child.ok()) return {};
  std::string out;
  while ((*child)->ReadAvailable(&out, absl::Milliseconds(200))) {
  }
  if ((*child)->Wait(absl::Seconds(10)).value_or(1) != 0) return {};
  std::vector<int> gpus;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (line.rfind("GPU ", 0) != 0) continue;
    int id = -1;
    absl::string_view number = line.substr(4, line.find(':') - 4);
    if (absl::SimpleAtoi(number, &id) && id >= 0) gpus.push_back(id);
  }
  return gpus;
}

// The secret file: the flag, else $COHORT_AGENT_SECRET_FILE, else the local cluster's master's
// (`cohort cluster up`), when it exists.
std::string SecretFile(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("COHORT_AGENT_SECRET_FILE"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::filesystem::path local =
      std::filesystem::path(cohort::client::LocalClusterDir()) / "master" / "agent-secret";
  std::error_code ec;
  return std::filesystem::exists(local, ec) ? local.string() : "";
}

// The agent secret into `options` (a missing file only warns: the master will refuse the
// agent and say so); an error naming the flag for a file that cannot be used.
absl::Status LoadSecret(const std::string& flag, cohort::agent::AgentOptions& options) {
  const std::string secret_file = SecretFile(flag);
  if (secret_file.empty()) {
    std::fprintf(stderr,
                 "cohort-agent: warning: no --secret-file (or $COHORT_AGENT_SECRET_FILE): the "
                 "master will refuse this agent; copy the master's agent-secret file here "
                 "(chmod 600) and pass it\n");
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> secret = cohort::ReadSecretFile(secret_file);
  if (!secret.ok()) return cohort::Annotate(secret.status(), "--secret-file");
  options.secret = *std::move(secret);
  return absl::OkStatus();
}

// "LO-HI" into the options' port range; InvalidArgument saying the form otherwise.
absl::Status ParsePortRange(const std::string& text, cohort::agent::AgentOptions& options) {
  std::vector<std::string> range = absl::StrSplit(text, '-');
  if (range.size() != 2 || !absl::SimpleAtoi(range[0], &options.port_lo) ||
      !absl::SimpleAtoi(range[1], &options.port_hi) || options.port_lo < 1 ||
      options.port_hi < options.port_lo || options.port_hi > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port-range ", text, ": expected LO-HI, e.g. 29500-29599"));
  }
  return absl::OkStatus();
}

}  // namespace

// The command line: the agent's options and the flags that become them.
struct Flags {
  cohort::agent::AgentOptions options;
  std::string master, secret_flag, tls_ca;
  int slots = 0, artificial = 0;
  double progress_deadline = 600;
  std::string gpus;
  std::string port_range = "29500-29599";
};

void AddFlags(CLI::App& app, Flags& f) {
  cohort::agent::AgentOptions& options = f.options;
  app.add_option("--master", f.master,
                 "Master URL (default: $COHORT_MASTER or the local cluster's)");
  auto* slots_opt =
      app.add_option("--slots", f.slots,
                     "CPU slots to offer (default: GPUs found by nvidia-smi, else the cores)")
          ->check(cohort::PositiveNumber());
  auto* artificial_opt =
      app.add_option("--artificial-slots", f.artificial,
                     "Pretend to have this many slots (for tests of the scheduler)")
          ->check(cohort::PositiveNumber())
          ->excludes(slots_opt);
  app.add_option("--gpus", f.gpus,
                 "GPUs to offer as slots, e.g. 0,1 (default: those nvidia-smi lists, unless "
                 "--slots is given); each worker of a trial gets one as CUDA_VISIBLE_DEVICES")
      ->excludes(slots_opt)
      ->excludes(artificial_opt);
  app.add_option("--secret-file", f.secret_flag,
                 "File holding the cluster's agent secret (the master prints where it keeps it: "
                 "DATA_DIR/agent-secret); must be private (chmod 600). Default: "
                 "$COHORT_AGENT_SECRET_FILE, else the local cluster's");
  app.add_option("--tls-ca", f.tls_ca,
                 "CA certificates (PEM) that an https:// master's certificate must chain to "
                 "(default: $COHORT_TLS_CA, else the system's store)");
  app.add_option("--id", options.id, "Agent id (default: the host name); unique per agent");
  app.add_option("--resource-pool", options.resource_pool,
                 "The master's resource pool to join (default: default); the master refuses a "
                 "pool its --resource-pools file does not name");
  app.add_option("--host", options.host,
                 "Address other machines reach this one at (default 127.0.0.1)");
  app.add_option("--port-range", f.port_range,
                 "Ports for trial rendezvous stores, LO-HI (default 29500-29599)");
  app.add_option("--work-dir", options.work_dir,
                 "Where contexts and run directories go (default: the data directory)");
  app.add_option("--cpus", options.cpus,
                 "Cores this agent's trials share (default: all of this machine's); each worker "
                 "gets cpus/slots compute threads. Give each agent its share when several run "
                 "on one machine")
      ->check(cohort::PositiveNumber());
  app.add_option("--progress-deadline", f.progress_deadline,
                 "Seconds a rank of a trial may wait in a collective, or be stopped, before the "
                 "run is failed (and restarted within max_restarts); trial list and describe "
                 "say so from min(60 s, half of it) on (default 600)")
      ->check(cohort::PositiveNumber());
  app.add_option("--keep-allocations", options.keep_allocations,
                 "Finished allocation directories to keep in the work directory, newest first "
                 "(default 20; checkpoints are in checkpoint storage, not there)")
      ->check(cohort::NonNegativeNumber());
  app.footer(
      "Example:\n  cohort-agent --master http://10.0.0.5:8080 --slots 8 --secret-file "
      "~/.cohort-agent-secret\n"
      "  cohort-agent --master https://master.example:8080 --tls-ca ca.crt --secret-file "
      "~/.cohort-agent-secret\n"
      "  cohort-agent --id a2 --artificial-slots 8 --port-range 29600-29699");
}

// GPU slots: --gpus, else (no --slots or --artificial-slots) the GPUs nvidia-smi lists. An
// error saying why for a bad --gpus.
absl::Status FinishGpus(Flags& f) {
  if (!f.gpus.empty()) {
    COHORT_ASSIGN_OR_RETURN(f.options.gpus, cohort::wire::ParseGpuList("--gpus", f.gpus));
  } else if (f.slots == 0 && f.artificial == 0) {
    f.options.gpus = ListGpus();
  }
  return absl::OkStatus();
}

// Fills in what the flags left to defaults; an error naming the flag for a bad value.
absl::Status FinishOptions(Flags& f) {
  cohort::agent::AgentOptions& options = f.options;
  options.master_url = cohort::client::MasterUrl(f.master);
  options.tls_ca_file = cohort::client::TlsCaFile(f.tls_ca);
  COHORT_RETURN_IF_ERROR(LoadSecret(f.secret_flag, options));
  COHORT_RETURN_IF_ERROR(FinishGpus(f));
  options.slots = f.artificial > 0 ? f.artificial
                  : f.slots > 0    ? f.slots
                                   : static_cast<int>(options.gpus.size());
  if (options.slots <= 0)
    options.slots = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  COHORT_RETURN_IF_ERROR(ParsePortRange(f.port_range, options));
  options.progress_deadline = absl::Seconds(f.progress_deadline);
  if (options.work_dir.empty()) {
    options.work_dir =
        (std::filesystem::path(cohort::client::LocalClusterDir()) / "agents" / options.id).string();
  }
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  // A master that closes a connection while a post is sent (a refused or outdated request)
  // is an error to handle, never a signal that ends the agent (cpp-httplib writes without
  // MSG_NOSIGNAL). What the agent starts gets the default back (Subprocess).
  ::signal(SIGPIPE, SIG_IGN);
  Flags f;
  char hostname[256] = "agent";
  ::gethostname(hostname, sizeof(hostname) - 1);
  f.options.id = hostname;
  CLI::App app{
      "cohort-agent: runs the trials a cohort-master places on this machine, one "
      "cohort-launch per trial, and streams their logs and metrics to the master."};
  AddFlags(app, f);
  if (std::optional<int> exit = cohort::ParseCommandLine(app, "cohort-agent", argc, argv)) {
    return *exit;
  }
  if (absl::Status finished = FinishOptions(f); !finished.ok()) {
    return cohort::UsageError("cohort-agent", std::string(finished.message()));
  }
  const cohort::agent::AgentOptions& options = f.options;
  const sigset_t stop_signals = SignalStopper::BlockStopSignals();
  cohort::agent::Agent agent(options);
  std::error_code ec;
  const std::string work_dir =
      std::filesystem::weakly_canonical(std::filesystem::absolute(options.work_dir), ec).string();
  SignalStopper stopper(stop_signals, agent, kHardStop, [&] {
    std::fprintf(stderr,
                 "cohort-agent %s: still stopping %s after SIGTERM (the master at %s does not "
                 "answer): stopping its trials' processes and exiting without reporting to it\n",
                 options.id.c_str(), absl::FormatDuration(kHardStop).c_str(),
                 options.master_url.c_str());
    absl::StatusOr<int> stopped =
        cohort::agent::StopMarked(cohort::agent::kWorkDirMarker, work_dir, absl::Milliseconds(500));
    if (!stopped.ok()) {
      std::fprintf(stderr, "cohort-agent: %s\n", std::string(stopped.status().message()).c_str());
    }
  });
  std::printf("cohort-agent %s: %d %s slots, master %s, work dir %s\n", options.id.c_str(),
              options.slots, options.gpus.empty() ? "CPU" : "GPU", options.master_url.c_str(),
              options.work_dir.c_str());
  std::fflush(stdout);
  absl::Status status = agent.Run();
  if (!status.ok()) {
    std::fprintf(stderr, "cohort-agent: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
