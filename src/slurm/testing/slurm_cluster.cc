#include "slurm/testing/slurm_cluster.h"

#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/functional/function_ref.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "common/net.h"
#include "common/small_file.h"

namespace cohort::slurm::testing {
namespace {

constexpr const char* kPrograms[] = {"munged", "mungekey", "slurmctld", "slurmd",
                                     "sinfo",  "sbatch",   "squeue",    "scancel"};

// `name` in PATH, /usr/sbin or /sbin (root's daemons are not always in a test's PATH).
std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = absl::StrCat(path != nullptr ? path : "", ":/usr/sbin:/sbin:/usr/bin:/bin");
  for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

absl::Status MakeDir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrCat("mkdir ", path, ": ", strerror(errno)));
  }
  ::chmod(path.c_str(), mode);  // whatever the umask
  return absl::OkStatus();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// `count` distinct free loopback ports: each bound by the kernel, all released together (a
// process taking one in between makes a daemon fail to start, not hang).
absl::StatusOr<std::vector<int>> FreePorts(int count) {
  std::vector<int> ports, fds;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    int port = 0;
    absl::StatusOr<int> fd = net::Listen("127.0.0.1", 0, &port);
    if (!fd.ok())
      status = fd.status();
    else {
      fds.push_back(*fd);
      ports.push_back(port);
    }
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

std::string UserName() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr ? pw->pw_name : "root";
}

std::string SlurmConf(const std::string& dir, const std::vector<int>& ports, int cpus) {
  std::string conf = absl::StrCat(
      "ClusterName=cohorttest\nSlurmctldHost=localhost\nSlurmctldPort=", ports[0],
      "\nSlurmdPort=", ports[1], "\nSlurmUser=", UserName(), "\nSlurmdUser=", UserName(),
      "\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=", dir, "/munge/munge.sock",
      "\nStateSaveLocation=", dir, "/state\nSlurmdSpoolDir=", dir, "/spool/%n",
      "\nSlurmctldPidFile=", dir, "/run/slurmctld.pid\nSlurmdPidFile=", dir,
      "/run/slurmd-%n.pid\nSlurmctldLogFile=", dir, "/log/slurmctld.log\nSlurmdLogFile=", dir,
      "/log/slurmd-%n.log\n");
  // Quick to notice a dead node, to kill a cancelled job and to give a pending job its reason;
  // finished jobs stay known 60 s.
  absl::StrAppend(&conf,
                  "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                  "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                  "ReturnToService=2\nMpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
                  "AccountingStorageType=accounting_storage/none\nMailProg=/bin/true\n"
                  "MinJobAge=60\nKillWait=5\nInactiveLimit=0\nSlurmdTimeout=10\n"
                  "SlurmdParameters=config_overrides\n"
                  // Pending jobs get their reason within seconds, not the default minute.
                  "SchedulerParameters=sched_interval=2\n");
  for (size_t k = 1; k + 1 < ports.size(); ++k) {
    absl::StrAppend(&conf, "NodeName=", SlurmCluster::NodeName(static_cast<int>(k)),
                    " NodeHostname=localhost NodeAddr=127.0.0.1 Port=", ports[k + 1],
                    " CPUs=", cpus, " RealMemory=1000 State=UNKNOWN\n");
  }
  absl::StrAppend(&conf, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
  return conf;
}

// The last `max_bytes` of a file (fewer when it is shorter); "" when it cannot be read.
std::string Tail(const std::string& path, std::streamoff max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - max_bytes));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void Stop(std::unique_ptr<Subprocess>& process) {
  if (process == nullptr) return;
  process->Signal(SIGTERM);
  if (!process->Wait(absl::Seconds(3)).ok()) {
    process->Signal(SIGKILL);
    (void)process->Wait(absl::Seconds(3));
  }
  process.reset();
}

// Every live process but this one that `match` accepts.
std::vector<pid_t> Processes(absl::FunctionRef<bool(pid_t)> match) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(entry->d_name, &pid) && pid != ::getpid() && match(pid)) {
      pids.push_back(pid);
    }
  }
  ::closedir(proc);
  return pids;
}

// Whether the process's environment holds every one of `entries` ("NAME=value"). slurmstepd's
// cannot be read this way: it writes its process title over it.
bool EnvironHas(pid_t pid, const std::vector<std::string>& entries) {
  absl::StatusOr<std::string> environ =
      ReadSmallFile(absl::StrCat("/proc/", pid, "/environ"), 1 << 20);
  if (!environ.ok()) return false;
  const std::vector<absl::string_view> vars = absl::StrSplit(*environ, '\0');
  return std::all_of(entries.begin(), entries.end(), [&](const std::string& e) {
    return std::find(vars.begin(), vars.end(), e) != vars.end();
  });
}

// Whether the process's working directory is `dir` (or, with `or_under`, beneath it).
bool CwdIs(pid_t pid, const std::string& dir, bool or_under = false) {
  char target[4096];
  const std::string link = absl::StrCat("/proc/", pid, "/cwd");
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return false;
  const absl::string_view cwd(target, static_cast<size_t>(n));
  return cwd == dir || (or_under && absl::StartsWith(cwd, dir + "/"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlurmCluster>> SlurmCluster::Start(int nodes, int cpus_per_node) {
  if (nodes < 1 || cpus_per_node < 1) {
    return absl::InvalidArgumentError("SlurmCluster needs at least one node and one CPU");
  }
  std::unique_ptr<SlurmCluster> cluster(new SlurmCluster());
  COHORT_RETURN_IF_ERROR(cluster->Prepare(nodes, cpus_per_node));
  COHORT_RETURN_IF_ERROR(cluster->StartMunge());
  COHORT_ASSIGN_OR_RETURN(cluster->slurmctld_, cluster->Launch("slurmctld", {"-D", "-i"}, ""));
  cluster->slurmd_.resize(static_cast<size_t>(nodes));
  for (int k = 1; k <= nodes; ++k) COHORT_RETURN_IF_ERROR(cluster->StartSlurmd(k));
  COHORT_RETURN_IF_ERROR(cluster->WaitForNodes(absl::Seconds(30)));
  return cluster;
}

absl::Status SlurmCluster::Prepare(int nodes, int cpus_per_node) {
  for (const char* name : kPrograms) {
    programs_[name] = FindProgram(name);
    if (programs_[name].empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name,
                       " is not installed: run scripts/install.sh --test (it installs Debian's "
                       "slurm-wlm and munge)"));
    }
  }
  COHORT_RETURN_IF_ERROR(MakeDir(dir(), 0755));  // munged's socket must be reachable
  for (const char* sub : {"munge", "state", "spool", "run", "log"}) {
    COHORT_RETURN_IF_ERROR(MakeDir(dir_.Join(sub), 0755));
  }
  COHORT_RETURN_IF_ERROR(MakeDir(dir_.Join("munge/key"), 0700));
  COHORT_ASSIGN_OR_RETURN(std::vector<int> ports, FreePorts(nodes + 2));
  return WriteText(conf_path(), SlurmConf(dir(), ports, cpus_per_node));
}

absl::Status SlurmCluster::StartMunge() {
  const std::string key = dir_.Join("munge/key/munge.key");
  SubprocessOptions create;
  create.argv = {programs_["mungekey"], "--create", "--keyfile=" + key};
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> mungekey, Subprocess::Start(create));
  std::string output;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline && output.size() < (1 << 16) &&
         mungekey->ReadAvailable(&output, absl::Milliseconds(100), 1 << 16)) {
  }
  absl::StatusOr<int> created = mungekey->Wait(std::max(deadline - absl::Now(), absl::Seconds(1)));
  if (!created.ok() || *created != 0) {
    return absl::UnavailableError(absl::StrCat("mungekey --create failed: ", output));
  }
  const std::string socket = dir_.Join("munge/munge.sock");
  COHORT_ASSIGN_OR_RETURN(munged_, Launch("munged",
                                          {"-F", "--socket=" + socket, "--key-file=" + key,
                                           "--log-file=" + dir_.Join("munge/munged.log"),
                                           "--pid-file=" + dir_.Join("munge/munged.pid"),
                                           "--seed-file=" + dir_.Join("munge/munged.seed")},
                                          ""));
  for (const absl::Time up_by = absl::Now() + absl::Seconds(10); absl::Now() < up_by;) {
    if (::access(socket.c_str(), F_OK) == 0) return absl::OkStatus();
    if (munged_->Poll().has_value()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::UnavailableError(
      absl::StrCat("munged did not make its socket within 10 s: ", LogTails()));
}

// Starts `name` in the foreground with its stdout and stderr in log/NAME[-NODE].out, in its own
// working directory (run/NAME[-NODE]; what it starts, slurmstepd included, inherits it), and
// this cluster's marks in its environment.
absl::StatusOr<std::unique_ptr<Subprocess>> SlurmCluster::Launch(const std::string& name,
                                                                 std::vector<std::string> argv,
                                                                 const std::string& node) {
  const std::string suffix = node.empty() ? name : absl::StrCat(name, "-", node);
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" >>\"$COHORT_SLURM_OUT\" 2>&1",
                  programs_[name]};
  options.argv.insert(options.argv.end(), argv.begin(), argv.end());
  options.env = {{"SLURM_CONF", conf_path()},
                 {"COHORT_SLURM_CLUSTER", dir()},
                 {"COHORT_SLURM_OUT", dir_.Join(absl::StrCat("log/", suffix, ".out"))}};
  options.cwd = dir_.Join("run/" + suffix);
  COHORT_RETURN_IF_ERROR(MakeDir(options.cwd, 0755));
  options.parent_death_signal = SIGKILL;
  return Subprocess::Start(options);
}

absl::Status SlurmCluster::StartSlurmd(int k) {
  COHORT_ASSIGN_OR_RETURN(slurmd_[static_cast<size_t>(k - 1)],
                          Launch("slurmd", {"-D", "-N", NodeName(k)}, NodeName(k)));
  return absl::OkStatus();
}

absl::Status SlurmCluster::WaitForNodes(absl::Duration timeout) {
  SlurmOptions quick = options();
  quick.timeout = absl::Seconds(5);
  const SlurmClient slurm(quick);
  std::string last = "no answer yet";
  for (const absl::Time deadline = absl::Now() + timeout; absl::Now() < deadline;) {
    absl::StatusOr<std::vector<NodeInfo>> nodes = slurm.Nodes("");
    if (nodes.ok()) {
      last.clear();
      for (const NodeInfo& node : *nodes) absl::StrAppend(&last, node.name, ":", node.state, " ");
      const bool idle = std::all_of(nodes->begin(), nodes->end(),
                                    [](const NodeInfo& node) { return node.state == "idle"; });
      if (idle && static_cast<int>(nodes->size()) == node_count()) return absl::OkStatus();
    } else {
      last = std::string(nodes.status().message());
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("Slurm's nodes were not all idle within ",
                                                  absl::FormatDuration(timeout),
                                                  " (last seen: ", last, "); logs: ", LogTails()));
}

std::map<std::string, std::string> SlurmCluster::env() const {
  return {{"SLURM_CONF", conf_path()}};
}

SlurmOptions SlurmCluster::options() const {
  SlurmOptions options;
  options.env = env();
  options.timeout = absl::Seconds(10);
  const auto sinfo = programs_.find("sinfo");
  if (sinfo != programs_.end()) options.bin_dir = sinfo->second.substr(0, sinfo->second.rfind('/'));
  return options;
}

absl::Status SlurmCluster::KillNode(int k) {
  if (k < 1 || k > node_count()) return absl::InvalidArgumentError(absl::StrCat("no node ", k));
  std::unique_ptr<Subprocess>& slurmd = slurmd_[static_cast<size_t>(k - 1)];
  if (slurmd == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(NodeName(k), " is down"));
  slurmd->Signal(SIGKILL);
  (void)slurmd->Wait(absl::Seconds(5));
  slurmd.reset();
  // Its job steps first (slurmstepd would report its processes' deaths), then their processes.
  const std::string node = NodeName(k);
  for (pid_t pid : Processes([&](pid_t pid) { return CwdIs(pid, RunDir(node)); })) {
    ::kill(pid, SIGKILL);
  }
  for (pid_t pid : Processes([&](pid_t pid) {
         return EnvironHas(pid, {"SLURM_CONF=" + conf_path(), "SLURMD_NODENAME=" + node});
       })) {
    ::kill(pid, SIGKILL);
  }
  return absl::OkStatus();
}

absl::Status SlurmCluster::RestartNode(int k) {
  if (k < 1 || k > node_count()) return absl::InvalidArgumentError(absl::StrCat("no node ", k));
  if (slurmd_[static_cast<size_t>(k - 1)] != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(NodeName(k), " is running"));
  }
  COHORT_RETURN_IF_ERROR(StartSlurmd(k));
  const SlurmClient slurm(options());
  for (const absl::Time deadline = absl::Now() + absl::Seconds(30); absl::Now() < deadline;) {
    absl::StatusOr<std::vector<NodeInfo>> nodes = slurm.Nodes("");
    if (nodes.ok()) {
      for (const NodeInfo& node : *nodes) {
        if (node.name == NodeName(k) && node.usable) return absl::OkStatus();
      }
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(NodeName(k), " was not usable within 30 s of its restart; ", LogTails()));
}

absl::Status SlurmCluster::CancelAllJobs(absl::Duration timeout) {
  SlurmOptions quick = options();
  quick.timeout = absl::Seconds(5);
  const SlurmClient slurm(quick);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<JobInfo>> live = slurm.JobsNamed("");
    if (live.ok() && live->empty()) return absl::OkStatus();
    last = live.status();
    if (live.ok()) {
      for (const JobInfo& job : *live) {
        if (job.state != JobState::kCompleting) (void)slurm.Cancel(job.id);
      }
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrCat("jobs still live after ",
                                                  absl::FormatDuration(timeout),
                                                  " of cancelling: ", last.ToString()));
}

std::string SlurmCluster::RunDir(const std::string& node) const {
  return dir_.Join("run/slurmd-" + node);
}

void SlurmCluster::KillStragglers() {
  auto ours = [&](pid_t pid) {
    return CwdIs(pid, dir(), /*or_under=*/true) ||
           EnvironHas(pid, {"COHORT_SLURM_CLUSTER=" + dir()}) ||
           EnvironHas(pid, {"SLURM_CONF=" + conf_path()});
  };
  for (const absl::Time deadline = absl::Now() + absl::Seconds(5); absl::Now() < deadline;) {
    const std::vector<pid_t> pids = Processes(ours);
    if (pids.empty()) return;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    absl::SleepFor(absl::Milliseconds(50));
  }
}

std::string SlurmCluster::LogTails() const {
  std::string tails;
  std::vector<std::string> files = {dir_.Join("munge/munged.log"), dir_.Join("log/slurmctld.log"),
                                    dir_.Join("log/slurmctld.out")};
  for (int k = 1; k <= node_count(); ++k) {
    files.push_back(dir_.Join(absl::StrCat("log/slurmd-", NodeName(k), ".log")));
    files.push_back(dir_.Join(absl::StrCat("log/slurmd-", NodeName(k), ".out")));
  }
  for (const std::string& file : files) {
    const std::string tail = Tail(file, 1500);
    if (!tail.empty()) absl::StrAppend(&tails, "\n--- ", file, " (end):\n", tail);
  }
  return tails;
}

SlurmCluster::~SlurmCluster() {
  if (slurmctld_ != nullptr) (void)CancelAllJobs(absl::Seconds(10));
  for (std::unique_ptr<Subprocess>& slurmd : slurmd_) Stop(slurmd);
  Stop(slurmctld_);
  Stop(munged_);
  KillStragglers();
}

}  // namespace cohort::slurm::testing
