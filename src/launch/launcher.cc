#include "launch/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "launch/line_prefixer.h"
#include "wire/launch_env.h"
#include "wire/worker_env.h"

extern char** environ;

namespace cohort::launch {
namespace {

// Store keys the launchers of a multi-node job share (workers never touch them).
constexpr char kAbortKey[] = "cohort/launch/abort";
constexpr char kJobKey[] = "cohort/launch/job";
std::string NodeExitKey(int node) { return absl::StrCat("cohort/launch/node/", node, "/exit"); }

// Byte written to the wake pipe when another node asked to abort (signals write their number).
constexpr unsigned char kAbortByte = 0xff;

std::atomic<int> g_signal_wake_fd{-1};

void OnSignal(int signal) {
  int saved_errno = errno;
  int fd = g_signal_wake_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signal);
    // The pipe is non-blocking: when it is full, Run has bytes to wake on already.
    ssize_t ignored = ::write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved_errno;
}

std::string SignalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", signal);
}

// "exited with status 3" / "was killed by signal 9 (SIGKILL)".
std::string DescribeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return absl::StrCat("was killed by signal ", sig, " (", SignalName(sig), ")");
  }
  return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
}

int ExitStatusOf(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

std::string Workers(int n) { return absl::StrCat(n, n == 1 ? " worker" : " workers"); }

absl::Status CheckExecutable(const std::string& path, const std::string& shown) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("command '", shown, "' does not exist (",
                                            std::strerror(errno), "); check the path"));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::PermissionDeniedError(
        absl::StrCat("command '", shown, "' is a directory, not a program"));
  }
  if (::access(path.c_str(), X_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("command '", shown, "' is not executable; make it so with: chmod +x ", path));
  }
  return absl::OkStatus();
}

// Resolves `name` the way execvp would: a name with a slash is a path, others are looked up in
// PATH. Returns the path to execute.
// --gpus: none (CPU slots), or one distinct GPU id per slot.
absl::Status CheckGpus(const std::vector<int>& gpus, int slots) {
  if (gpus.empty()) return absl::OkStatus();
  if (static_cast<int>(gpus.size()) != slots) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpus names ", gpus.size(), " GPU(s) for --slots ", slots,
        ": give one GPU id per slot, e.g. --slots 2 --gpus 0,1"));
  }
  return wire::ParseGpuList("--gpus", wire::FormatGpuList(gpus)).status();  // distinct, >= 0
}

absl::StatusOr<std::string> ResolveExecutable(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("the command is an empty string");
  if (name.find('/') != std::string::npos) {
    COHORT_RETURN_IF_ERROR(CheckExecutable(name, name));
    return name;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  absl::Status first_problem;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    absl::Status status = CheckExecutable(candidate, candidate);
    if (status.ok()) return candidate;
    if (!absl::IsNotFound(status) && first_problem.ok()) first_problem = status;
  }
  if (!first_problem.ok()) return first_problem;
  return absl::NotFoundError(absl::StrCat("command '", name, "' not found in PATH (", path,
                                          "); give its path (e.g. ./", name,
                                          ") or check the spelling"));
}

int CoresAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Sends `signal` to the worker's process group (the worker and its children), or to the worker
// alone if it has not yet made its group.
void SignalWorker(pid_t pid, int signal) {
  if (::kill(-pid, signal) != 0) ::kill(pid, signal);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Launcher>> Launcher::Create(LaunchOptions options) {
  std::unique_ptr<Launcher> launcher(new Launcher(std::move(options)));
  COHORT_RETURN_IF_ERROR(launcher->Prepare());
  return launcher;
}

absl::Status Launcher::Prepare() {
  const LaunchOptions& o = options_;
  if (o.slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--slots must be at least 1, got ", o.slots));
  }
  if (o.nnodes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--nnodes must be at least 1, got ", o.nnodes));
  }
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return absl::InvalidArgumentError(absl::StrCat("--node-rank ", o.node_rank,
                                                   " is out of range: with --nnodes ", o.nnodes,
                                                   " it must be between 0 and ", o.nnodes - 1));
  }
  if (o.nnodes > 1 && o.chief_host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nnodes ", o.nnodes,
                     " needs --chief-addr HOST[:PORT], the address of node 0 "
                     "(where the rendezvous store runs) as the other nodes can reach it"));
  }
  if (o.rendezvous_port < -1 || o.rendezvous_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("rendezvous port ", o.rendezvous_port, " is out of range (0-65535)"));
  }
  if (o.grace_period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--grace-period must not be negative");
  }
  COHORT_RETURN_IF_ERROR(CheckGpus(o.gpus, o.slots));
  if (o.command.empty()) {
    return absl::InvalidArgumentError(
        "no command given: put the worker command after '--', e.g. "
        "cohort-launch --slots 2 -- ./my_trial");
  }
  COHORT_ASSIGN_OR_RETURN(executable_, ResolveExecutable(o.command[0]));

  chief_host_ = o.chief_host.empty() ? "127.0.0.1" : o.chief_host;
  port_ = o.rendezvous_port;
  if (port_ < 0) port_ = (o.chief_host.empty() && o.nnodes == 1) ? 0 : kDefaultRendezvousPort;
  if (port_ == 0 && o.node_rank > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", o.node_rank,
                     " needs the chief's rendezvous port: pass --chief-addr HOST:PORT "
                     "with the port node 0 announced"));
  }

  int cores = o.cores > 0 ? o.cores : CoresAvailable();
  threads_per_worker_ = std::max(1, cores / o.slots);

  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  wake_read_fd_ = wake[0];
  wake_write_fd_ = wake[1];
  return SetUpStore();
}

absl::Status Launcher::SetUpStore() {
  const LaunchOptions& o = options_;
  if (o.node_rank == 0) {
    // A single-node job on the default loopback address keeps the store off the network.
    const bool loopback_only = o.nnodes == 1 && o.chief_host.empty();
    auto server = comm::TcpStoreServer::Start(loopback_only ? "127.0.0.1" : "", port_);
    if (!server.ok()) {
      return Annotate(server.status(),
                      absl::StrCat("hosting the rendezvous store on port ", port_,
                                   " (is another job using it? choose another with "
                                   "--rendezvous-port or --chief-addr HOST:PORT)"));
    }
    server_ = std::move(server).value();
    if (port_ == 0 && o.nnodes > 1) {
      Message(absl::StrCat("rendezvous store listening on port ", server_->port(),
                           "; start the other nodes with --chief-addr ", chief_host_, ":",
                           server_->port()));
    }
    port_ = server_->port();
  }
  if (o.nnodes == 1) return absl::OkStatus();

  // Multi-node: every launcher is a client of the store, to stop the whole job on failure.
  net::HostPort address{o.node_rank == 0 ? "127.0.0.1" : chief_host_, port_};
  COHORT_ASSIGN_OR_RETURN(store_, ConnectToJobStore(address));
  COHORT_ASSIGN_OR_RETURN(
      abort_watcher_,
      comm::FailureWatcher::Start(address, kAbortKey, [this](const std::string& notice) {
        {
          std::lock_guard<std::mutex> lock(abort_mu_);
          abort_notice_ = notice;
        }
        unsigned char byte = kAbortByte;
        // Non-blocking: when the pipe is full, Run has bytes to wake on already.
        ssize_t ignored = ::write(wake_write_fd_, &byte, 1);
        (void)ignored;
      }));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<comm::TcpStore>> Launcher::ConnectToJobStore(
    const net::HostPort& address) {
  const LaunchOptions& o = options_;
  const absl::Time deadline = absl::Now() + o.connect_timeout;
  bool said = false;
  while (true) {
    comm::TcpStore::Options store_options;
    store_options.connect_timeout = std::max(absl::Seconds(1), deadline - absl::Now());
    auto store = comm::TcpStore::Connect(address, store_options);
    if (!store.ok()) {
      return Annotate(store.status(),
                      absl::StrCat("node ", o.node_rank, " reaching node 0's rendezvous store at ",
                                   chief_host_, ":", port_,
                                   " (is node 0's cohort-launch running, and is the address "
                                   "reachable from here?)"));
    }
    if (o.job_id.empty()) return store;
    if (o.node_rank == 0) {
      COHORT_RETURN_IF_ERROR((*store)->Set(kJobKey, o.job_id));
      return store;
    }
    absl::StatusOr<std::string> job = (*store)->Get(kJobKey, absl::Seconds(2));
    if (job.ok() && *job == o.job_id) return store;
    const std::string other = job.ok() ? absl::StrCat("job ", *job) : "no job";
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("node ", o.node_rank, ": the rendezvous store at ", chief_host_, ":", port_,
                       " still belongs to ", other, ", not job ", o.job_id, " after ",
                       absl::FormatDuration(o.connect_timeout)));
    }
    if (!said) {
      Message(absl::StrCat("the rendezvous store at ", chief_host_, ":", port_, " belongs to ",
                           other, ", not job ", o.job_id,
                           " (an earlier job's launcher?); waiting for node 0's"));
      said = true;
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
}

Launcher::~Launcher() {
  abort_watcher_.reset();
  for (pid_t pid : pids_) {
    SignalWorker(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  if (wake_read_fd_ >= 0) ::close(wake_read_fd_);
  if (wake_write_fd_ >= 0) ::close(wake_write_fd_);
}

void Launcher::RequestStop(int signal) {
  unsigned char byte = static_cast<unsigned char>(signal);
  // Non-blocking: when the pipe is full, Run has bytes to wake on already.
  ssize_t ignored = ::write(wake_write_fd_, &byte, 1);
  (void)ignored;
}

void Launcher::Message(const std::string& text) const {
  // When stderr itself cannot be written (its reader went away) there is nowhere left to say so.
  WriteLines(options_.stderr_fd, absl::StrCat("cohort-launch: ", text, "\n")).IgnoreError();
}

std::vector<std::string> Launcher::WorkerEnvironment(int local_rank) const {
  const LaunchOptions& o = options_;
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  wire::LaunchEnv launch;
  launch.ranks = wire::WorkerRanks{.rank = o.node_rank * o.slots + local_rank,
                                   .size = o.nnodes * o.slots,
                                   .local_rank = local_rank,
                                   .local_size = o.slots,
                                   .cross_rank = o.node_rank,
                                   .cross_size = o.nnodes};
  launch.chief_addr = chief_host_;
  launch.rendezvous_port = port_;
  launch.launcher = true;
  // A GPU slot: the worker sees its GPU only, as CUDA device 0.
  if (!o.gpus.empty()) {
    launch.cuda_visible_devices = wire::FormatGpuList({o.gpus[local_rank]});
    launch.gpu_slot = true;
  }
  // The fields left unset (network interface, timeouts, host-store flag, CUDA_VISIBLE_DEVICES
  // without --gpus) are absent from ToEnv, so the values the user gave the launcher pass
  // through with the rest of its environment.
  for (const auto& [name, value] : launch.ToEnv()) {
    if (value) {
      env[name] = *value;
    } else {
      env.erase(name);
    }
  }
  for (const char* name : wire::kThreadVariables) {
    env.emplace(name, absl::StrCat(threads_per_worker_));  // keeps a value the user set
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(absl::StrCat(key, "=", value));
  return out;
}

namespace {

struct Stream {
  int fd = -1;      // read end of the worker's pipe; -1 once closed
  int out_fd = -1;  // where its prefixed lines go
  LinePrefixer prefixer;
  Stream(int fd, int out_fd, std::string prefix)
      : fd(fd), out_fd(out_fd), prefixer(std::move(prefix)) {}
};

struct WorkerState {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;
  std::vector<Stream> streams;  // stdout, stderr
};

// Relays a worker's prefixed lines. A failed write is not reported: the destination is the
// launcher's own output (stdout_fd / stderr_fd), whose reader went away (EPIPE; SIGPIPE is
// ignored while Run runs), so there is no one left to tell, and the launcher must go on
// supervising the workers.
void Relay(const Stream& stream, const std::string& lines) {
  if (!lines.empty()) WriteLines(stream.out_fd, lines).IgnoreError();
}

// Reads what `stream` has now (non-blocking) and relays it, chunk by chunk (so a flood never
// gathers here); `until_drained`: until the pipe is empty, at most kMaxDrainBytes (a process the
// worker left may write for ever). Returns false at end of stream.
constexpr size_t kMaxDrainBytes = 16u << 20;
bool Pump(Stream& stream, bool until_drained) {
  char buf[65536];
  bool open = true;
  for (size_t drained = 0; drained < kMaxDrainBytes;) {
    ssize_t n = ::read(stream.fd, buf, sizeof(buf));
    if (n > 0) {
      std::string lines;
      stream.prefixer.Consume(absl::string_view(buf, static_cast<size_t>(n)), &lines);
      Relay(stream, lines);
      drained += static_cast<size_t>(n);
      if (!until_drained) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    open = false;  // EOF or error
    break;
  }
  if (!open) {
    std::string lines;
    stream.prefixer.Finish(&lines);
    Relay(stream, lines);
    ::close(stream.fd);
    stream.fd = -1;
  }
  return open;
}

void CloseStream(Stream& stream) {
  if (stream.fd < 0) return;
  Pump(stream, /*until_drained=*/true);
  if (stream.fd < 0) return;
  std::string lines;
  stream.prefixer.Finish(&lines);
  Relay(stream, lines);
  ::close(stream.fd);
  stream.fd = -1;
}

// While alive: SIGINT and SIGTERM write their number to `wake_fd` (when `forward` is set) and
// SIGPIPE is ignored, so that a reader of our stdout that goes away does not kill the launcher
// (and orphan the workers). The destructor restores the previous handlers.
class SignalHandlers {
 public:
  SignalHandlers(bool forward, int wake_fd) : forward_(forward) {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    sigemptyset(&action.sa_mask);
    if (forward_) {
      g_signal_wake_fd.store(wake_fd);
      action.sa_handler = OnSignal;
      action.sa_flags = SA_RESTART;
      ::sigaction(SIGINT, &action, &old_int_);
      ::sigaction(SIGTERM, &action, &old_term_);
    }
    action.sa_handler = SIG_IGN;
    action.sa_flags = 0;
    ::sigaction(SIGPIPE, &action, &old_pipe_);
  }
  ~SignalHandlers() {
    if (forward_) {
      ::sigaction(SIGINT, &old_int_, nullptr);
      ::sigaction(SIGTERM, &old_term_, nullptr);
      g_signal_wake_fd.store(-1);
    }
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

 private:
  bool forward_;
  struct sigaction old_int_, old_term_, old_pipe_;
};

// What a forked worker needs to exec, built before fork: after fork, in a process with threads
// (the store server), a child may only make async-signal-safe calls.
struct ExecPlan {
  const char* executable = nullptr;
  std::vector<char*> argv;  // null-terminated
  std::string exec_failed;  // written to the worker's stderr when execve fails
  pid_t launcher_pid = -1;
  int dev_null = -1;  // the worker's stdin; -1: left as it is
};

// In the forked child: makes the worker its own process group that dies with the launcher,
// connects its stdout/stderr to the pipes and stdin to /dev/null, resets signal dispositions
// and the mask, and execs. Never returns (exit 127 when execve fails, 1 when the launcher died
// before the child could tie itself to it). Async-signal-safe calls only.
[[noreturn]] void ExecWorker(const ExecPlan& plan, char* const* envp, int out_fd, int err_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != plan.launcher_pid) ::_exit(1);  // the launcher died before prctl
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  if (plan.dev_null >= 0) ::dup2(plan.dev_null, STDIN_FILENO);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) {
    ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(plan.executable, plan.argv.data(), envp);
  // Nothing to do if even this write fails: the exit status (127) still tells.
  ssize_t ignored = ::write(STDERR_FILENO, plan.exec_failed.data(), plan.exec_failed.size());
  (void)ignored;
  ::_exit(127);
}

// A node's abort notice is "<status> <what happened>" (status > 0). Returns the status (1 when
// the notice has none) and sets *what to the rest (the whole notice when it has no status).
int ParseAbortNotice(const std::string& notice, std::string* what) {
  int status = 1;
  std::vector<std::string> parts = absl::StrSplit(notice, absl::MaxSplits(' ', 1));
  if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &status) && status > 0) {
    *what = parts[1];
    return status;
  }
  *what = notice;
  return 1;
}

}  // namespace

// Run's state: the workers and how far stopping them has got.
struct Launcher::RunState {
  std::vector<WorkerState> workers;
  int running = 0;      // workers started and not yet reaped
  int exit_status = 0;  // the job's exit status, set when the stop begins
  bool stopping = false;
  bool killed = false;  // SIGKILL sent to every worker still running
  absl::Time kill_deadline = absl::InfiniteFuture();
};

int Launcher::Run() {
  RunState run;
  run.workers.resize(options_.slots);
  {
    SignalHandlers handlers(options_.handle_signals, wake_write_fd_);
    StartWorkers(run);
    while (run.running > 0) {
      PollAndRelay(run);
      ReapExitedWorkers(run);
      KillAfterGracePeriod(run);
    }
    // Every worker has exited. Relay what is left in the pipes (a worker's own children may
    // keep them open: only what is already there is read) and the partial last lines.
    for (WorkerState& w : run.workers) {
      for (Stream& s : w.streams) CloseStream(s);
    }
  }
  return FinishNodes(run.exit_status);
}

void Launcher::StopAll(RunState& run, int signal, const std::string& why) {
  if (!why.empty()) Message(why);
  for (WorkerState& w : run.workers) {
    if (w.running) SignalWorker(w.pid, signal);
  }
}

void Launcher::BeginStop(RunState& run, int status, int signal, const std::string& why,
                         const std::string& abort_notice) {
  run.stopping = true;
  run.exit_status = status;
  run.kill_deadline = absl::Now() + options_.grace_period;
  StopAll(run, signal, why);
  if (store_ != nullptr && !abort_notice.empty()) {
    absl::Status told = store_->Set(kAbortKey, abort_notice);
    if (!told.ok()) {
      Message(absl::StrCat("could not tell the other nodes to stop (", told.message(),
                           "); they stop when they lose the rendezvous store"));
    }
  }
}

void Launcher::StartWorkers(RunState& run) {
  const LaunchOptions& o = options_;
  ExecPlan plan;
  plan.executable = executable_.c_str();
  for (const std::string& arg : o.command) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  plan.exec_failed = absl::StrCat("cohort-launch: could not execute ", executable_, "\n");
  plan.launcher_pid = ::getpid();
  plan.dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  for (int local_rank = 0; local_rank < o.slots; ++local_rank) {
    WorkerState& w = run.workers[local_rank];
    w.rank = o.node_rank * o.slots + local_rank;
    std::vector<std::string> env_strings = WorkerEnvironment(local_rank);
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      Message(absl::StrCat("could not create pipes for rank ", w.rank, ": ", std::strerror(errno)));
      BeginStop(run, 1, SIGTERM, "", "");
      break;
    }
    pid_t pid = ::fork();
    if (pid == 0) ExecWorker(plan, envp.data(), out_pipe[1], err_pipe[1]);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (pid < 0) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      Message(absl::StrCat("could not start rank ", w.rank, ": fork: ", std::strerror(errno)));
      BeginStop(run, 1, SIGTERM, "", "");
      break;
    }
    ::setpgid(pid, pid);  // also done by the child; whichever runs first wins
    w.pid = pid;
    w.running = true;
    ++run.running;
    pids_.push_back(pid);
    SetNonBlocking(out_pipe[0]);
    SetNonBlocking(err_pipe[0]);
    const std::string prefix = absl::StrCat("[rank=", w.rank, "] ");
    w.streams.emplace_back(out_pipe[0], o.stdout_fd, prefix);
    w.streams.emplace_back(err_pipe[0], o.stderr_fd, prefix);
  }
  if (plan.dev_null >= 0) ::close(plan.dev_null);
}

void Launcher::PollAndRelay(RunState& run) {
  std::vector<pollfd> fds;
  std::vector<Stream*> fd_streams;
  fds.push_back({wake_read_fd_, POLLIN, 0});
  fd_streams.push_back(nullptr);
  for (WorkerState& w : run.workers) {
    for (Stream& s : w.streams) {
      if (s.fd >= 0) {
        fds.push_back({s.fd, POLLIN, 0});
        fd_streams.push_back(&s);
      }
    }
  }
  // Child exits are found by polling waitpid: at most this long after the exit. (The wake
  // pipe does not carry SIGCHLD, so that an in-process Launcher needs no handler for it.)
  absl::Duration timeout = absl::Milliseconds(50);
  if (run.stopping && !run.killed) {
    timeout = std::min(timeout, std::max(absl::ZeroDuration(), run.kill_deadline - absl::Now()));
  }
  int ready =
      ::poll(fds.data(), fds.size(), static_cast<int>(absl::ToInt64Milliseconds(timeout)) + 1);
  if (ready < 0 && errno != EINTR) {
    Message(absl::StrCat("poll: ", std::strerror(errno)));
    if (!run.stopping) BeginStop(run, 1, SIGTERM, "", "");
  }
  for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
    if (fds[i].revents != 0) Pump(*fd_streams[i], /*until_drained=*/false);
  }
  if (ready > 0 && (fds[0].revents & POLLIN)) HandleWakeBytes(run);
}

void Launcher::HandleWakeBytes(RunState& run) {
  const LaunchOptions& o = options_;
  unsigned char bytes[64];
  ssize_t n = ::read(wake_read_fd_, bytes, sizeof(bytes));
  for (ssize_t i = 0; i < n; ++i) {
    if (bytes[i] == kAbortByte) {
      if (run.stopping) continue;
      std::string notice;
      {
        std::lock_guard<std::mutex> lock(abort_mu_);
        notice = abort_notice_;
      }
      std::string what;
      const int status = ParseAbortNotice(notice, &what);
      BeginStop(run, status, SIGTERM,
                absl::StrCat("another node stopped the job (", what, "); stopping the ",
                             Workers(run.running), " on this node"),
                "");
      continue;
    }
    const int signal = bytes[i];
    if (!run.stopping) {
      BeginStop(
          run, 128 + signal, signal,
          absl::StrCat("received ", SignalName(signal), "; forwarding it to ", Workers(run.running),
                       " (SIGKILL in ", absl::FormatDuration(o.grace_period), ")"),
          absl::StrCat(128 + signal, " node ", o.node_rank, " received ", SignalName(signal)));
    } else if (!run.killed) {
      run.killed = true;
      StopAll(run, SIGKILL,
              absl::StrCat("received ", SignalName(signal), " again; killing the workers now"));
    }
  }
}

void Launcher::ReapExitedWorkers(RunState& run) {
  const LaunchOptions& o = options_;
  for (WorkerState& w : run.workers) {
    if (!w.running) continue;
    int wait_status = 0;
    pid_t r = ::waitpid(w.pid, &wait_status, WNOHANG);
    if (r != w.pid) continue;
    w.running = false;
    w.wait_status = wait_status;
    --run.running;
    pids_.erase(std::find(pids_.begin(), pids_.end(), w.pid));
    // Relay what it wrote before its exit before saying anything about the exit.
    for (Stream& s : w.streams) {
      if (s.fd >= 0) Pump(s, /*until_drained=*/true);
    }
    const bool failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
    if (failed && !run.stopping) {
      std::string what =
          absl::StrCat("rank ", w.rank, " (pid ", w.pid, ") ", DescribeWaitStatus(wait_status));
      BeginStop(run, ExitStatusOf(wait_status), SIGTERM,
                run.running > 0 ? absl::StrCat(what, "; stopping the other ", Workers(run.running))
                                : what,
                absl::StrCat(ExitStatusOf(wait_status), " node ", o.node_rank, ": ", what));
    } else if (run.killed && WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL) {
      Message(absl::StrCat("rank ", w.rank, " (pid ", w.pid,
                           ") was killed with SIGKILL after the grace period"));
    }
  }
}

void Launcher::KillAfterGracePeriod(RunState& run) {
  if (!run.stopping || run.killed || run.running == 0 || absl::Now() < run.kill_deadline) return;
  run.killed = true;
  std::vector<int> ranks;
  for (const WorkerState& w : run.workers) {
    if (w.running) ranks.push_back(w.rank);
  }
  StopAll(run, SIGKILL,
          absl::StrCat("rank", ranks.size() == 1 ? " " : "s ", absl::StrJoin(ranks, ", "),
                       " still running ", absl::FormatDuration(options_.grace_period),
                       " after SIGTERM; sending SIGKILL"));
}

int Launcher::FinishNodes(int status) {
  const LaunchOptions& o = options_;
  if (store_ == nullptr) return status;
  abort_watcher_.reset();  // from here on a vanishing store is expected
  absl::Status set = store_->Set(NodeExitKey(o.node_rank), absl::StrCat(status));
  if (!set.ok() && o.node_rank != 0) {
    Message(absl::StrCat("could not report this node's exit to node 0: ", set.message()));
  }
  if (o.node_rank != 0) return status;
  // Node 0 keeps the store up until the other nodes' workers are done with it.
  const absl::Time deadline = absl::Now() + o.node_exit_timeout;
  for (int node = 1; node < o.nnodes; ++node) {
    auto value =
        store_->Get(NodeExitKey(node), std::max(absl::ZeroDuration(), deadline - absl::Now()));
    if (!value.ok()) {
      Message(absl::StrCat("node ", node, " did not report its exit within ",
                           absl::FormatDuration(o.node_exit_timeout),
                           "; shutting down the rendezvous store anyway"));
      if (status == 0) status = 1;
      continue;
    }
    int node_status = 0;
    if (absl::SimpleAtoi(*value, &node_status) && node_status != 0 && status == 0) {
      Message(absl::StrCat("node ", node, " finished with status ", node_status));
      status = node_status;
    }
  }
  return status;
}

}  // namespace cohort::launch
