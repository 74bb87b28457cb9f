#include "agent/slurm_node.h"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/allocation_run.h"
#include "client/master_client.h"
#include "cohort/status.h"
#include "common/clock.h"
#include "wire/agent_protocol.h"

namespace cohort::agent::slurm_node {
namespace fs = std::filesystem;
namespace {

// How long a node keeps asking a master that does not answer for its start action.
constexpr absl::Duration kStartPatience = absl::Minutes(2);
constexpr absl::Duration kKillGrace = absl::Seconds(10);

absl::StatusOr<std::string> Required(GetEnv get, const char* name) {
  std::optional<std::string> value = get(name);
  if (!value || value->empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, " is not set: cohort-slurm-node runs inside a Slurm job that "
                           "cohort-master submitted (see cohort-slurm-node --help)"));
  }
  return *value;
}

absl::StatusOr<int> RequiredInt(GetEnv get, const char* name, int lo, int hi) {
  COHORT_ASSIGN_OR_RETURN(std::string text, Required(get, name));
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < lo || value > hi) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a whole number in [", lo, ", ",
                                                   hi, "], got '", text.substr(0, 32), "'"));
  }
  return value;
}

// A port nobody holds on this machine now (the kernel's choice for port 0).
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  close(fd);
  if (!ok) return absl::UnavailableError(absl::StrCat("finding a free port: ", std::strerror(err)));
  return ntohs(addr.sin_port);
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// SLURM_STEP_GPUS or CUDA_VISIBLE_DEVICES, as numbers ("0,1"); empty when neither is set.
std::vector<int> SlurmGpus() {
  std::vector<int> out;
  std::optional<std::string> list = Env("SLURM_STEP_GPUS");
  if (!list) list = Env("CUDA_VISIBLE_DEVICES");
  if (!list) return out;
  for (absl::string_view part : absl::StrSplit(*list, ',', absl::SkipEmpty())) {
    int gpu = 0;
    if (absl::SimpleAtoi(part, &gpu) && gpu >= 0) out.push_back(gpu);
  }
  return out;
}

}  // namespace

absl::StatusOr<NodeEnv> ReadNodeEnv(GetEnv get) {
  NodeEnv env;
  COHORT_ASSIGN_OR_RETURN(env.master_url, Required(get, "COHORT_MASTER"));
  COHORT_ASSIGN_OR_RETURN(env.allocation, Required(get, "COHORT_ALLOCATION"));
  COHORT_ASSIGN_OR_RETURN(env.token, Required(get, "COHORT_ALLOCATION_TOKEN"));
  COHORT_ASSIGN_OR_RETURN(env.job_id, Required(get, "SLURM_JOB_ID"));
  COHORT_ASSIGN_OR_RETURN(env.nnodes, RequiredInt(get, "COHORT_SLURM_NNODES", 1, 100000));
  COHORT_ASSIGN_OR_RETURN(env.node_rank, RequiredInt(get, "SLURM_NODEID", 0, env.nnodes - 1));
  env.node_name = get("SLURMD_NODENAME").value_or(HostName());
  env.tls_ca_file = get("COHORT_TLS_CA").value_or("");
  env.chief_addr = get("COHORT_CHIEF_ADDR").value_or("");
  if (env.nnodes > 1 && env.chief_addr.empty()) {
    return absl::FailedPreconditionError(
        "COHORT_CHIEF_ADDR is not set: a node of a multi-node job is started by "
        "`cohort-slurm-node job`, which sets it");
  }
  if (std::optional<std::string> cpus = get("SLURM_CPUS_PER_TASK")) {
    if (!absl::SimpleAtoi(*cpus, &env.cpus) || env.cpus < 1) env.cpus = 1;
  }
  std::string base = get("COHORT_NODE_WORK_DIR").value_or("");
  if (base.empty()) base = get("TMPDIR").value_or("");
  if (base.empty()) base = "/tmp";
  for (char c : env.job_id + env.allocation) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      return absl::InvalidArgumentError("SLURM_JOB_ID or COHORT_ALLOCATION holds characters "
                                        "that cannot name a directory");
    }
  }
  env.work_dir = (fs::path(base) / absl::StrCat("cohort-slurm-", env.job_id, "-", env.node_rank))
                     .string();
  return env;
}

absl::StatusOr<JobStep> PlanJobStep(const std::string& self, GetEnv get) {
  COHORT_ASSIGN_OR_RETURN(int nnodes, RequiredInt(get, "COHORT_SLURM_NNODES", 1, 100000));
  JobStep step;
  step.argv = {"srun",
               absl::StrCat("--nodes=", nnodes),
               absl::StrCat("--ntasks=", nnodes),
               "--ntasks-per-node=1",
               "--kill-on-bad-exit=0",
               "--export=ALL"};
  // Since Slurm 22.05 srun does not take the job's --cpus-per-task by itself.
  if (std::optional<std::string> cpus = get("SLURM_CPUS_PER_TASK")) {
    int n = 0;
    if (absl::SimpleAtoi(*cpus, &n) && n > 0) step.argv.push_back(absl::StrCat("--cpus-per-task=", n));
  }
  step.argv.push_back(self);
  step.argv.push_back("node");
  if (nnodes > 1) {
    COHORT_ASSIGN_OR_RETURN(int port, FreePort());
    step.chief_addr = absl::StrCat(get("COHORT_CHIEF_HOST").value_or(HostName()), ":", port);
  }
  return step;
}

int RunJob(const std::string& self) {
  absl::StatusOr<JobStep> step = PlanJobStep(self, &Env);
  if (!step.ok()) {
    std::cerr << "cohort-slurm-node job: " << step.status().message() << "\n";
    return 1;
  }
  if (!step->chief_addr.empty()) setenv("COHORT_CHIEF_ADDR", step->chief_addr.c_str(), 1);
  std::vector<char*> argv;
  for (std::string& arg : step->argv) argv.push_back(arg.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "cohort-slurm-node job: starting srun: " << std::strerror(errno)
            << " (is Slurm's srun on the PATH of the job?)\n";
  return 1;
}

namespace {

// Asks the master for this node's start action, patiently while it does not answer.
absl::StatusOr<wire::StartAction> FetchStart(const NodeEnv& env) {
  client::MasterClient master(env.master_url, absl::Seconds(30));
  master.set_bearer_token(env.token);
  master.set_tls_ca_file(env.tls_ca_file);
  const std::string path =
      absl::StrCat("/api/v1/allocations/", env.allocation, "/nodes/", env.node_rank,
                   "/start?host=", env.node_name);
  const absl::Time deadline = absl::Now() + kStartPatience;
  for (;;) {
    absl::StatusOr<nlohmann::json> body = master.Get(path);
    if (body.ok()) return wire::ParseStartAction(*body);
    if (!absl::IsUnavailable(body.status()) || absl::Now() > deadline) return body.status();
    absl::SleepFor(absl::Seconds(1));
  }
}

// Takes SIGUSR1 (the master's stop) and SIGTERM/SIGINT (Slurm ending the job) on a thread of
// its own; they are blocked everywhere else (the launcher gets an unblocked mask).
class NodeSignals {
 public:
  NodeSignals() {
    sigemptyset(&set_);
    for (int s : {SIGUSR1, SIGTERM, SIGINT}) sigaddset(&set_, s);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  void Start(std::shared_ptr<AllocationControl> control, std::atomic<bool>* host_ended) {
    thread_ = std::thread([this, control, host_ended] {
      int signal = 0;
      while (!done_ && sigwait(&set_, &signal) == 0 && !done_) {
        if (signal != SIGUSR1) *host_ended = true;
        control->Stop(wire::StopMode::kPreempt, kKillGrace);
      }
    });
  }
  ~NodeSignals() {
    done_ = true;
    if (thread_.joinable()) {
      pthread_kill(thread_.native_handle(), SIGUSR1);
      thread_.join();
    }
  }

 private:
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

int RunNode(const std::string& self) {
  NodeSignals signals;  // before any thread starts
  absl::StatusOr<NodeEnv> env = ReadNodeEnv(&Env);
  if (!env.ok()) {
    std::cerr << "cohort-slurm-node node: " << env.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<wire::StartAction> action = FetchStart(*env);
  if (!action.ok()) {
    std::cerr << "cohort-slurm-node node " << env->node_rank << " of allocation "
              << env->allocation << ": fetching its start action: " << action.status().message()
              << "\n";
    return 1;
  }
  action->chief_addr = env->chief_addr;
  action->context = absl::StrCat("/api/v1/allocations/", env->allocation, "/context");
  std::atomic<bool> host_ended{false};
  AllocationRunOptions options;
  options.master_url = env->master_url;
  options.tls_ca_file = env->tls_ca_file;
  options.agent_id = env->node_name;
  options.launcher = (fs::path(self).parent_path() / "cohort-launch").string();
  options.work_dir = env->work_dir;
  options.threads_per_worker = std::max(1, env->cpus / std::max(1, action->slots));
  if (Env("COHORT_SLOT_TYPE").value_or("") == "cuda") options.gpus = SlurmGpus();
  options.kill_grace = kKillGrace;
  options.host_ended = &host_ended;
  options.host_ended_note = absl::StrCat(
      "slurm: job ", env->job_id, " on node ", env->node_name,
      " was ended by Slurm (its time limit, an operator's scancel or a node failure); the "
      "trial was told to checkpoint");
  auto control = std::make_shared<AllocationControl>(RealClock());
  signals.Start(control, &host_ended);
  return AllocationRun(std::move(options), *std::move(action), control).Run();
}

}  // namespace cohort::agent::slurm_node
