#include "tests/testing/worker_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cohort::testing {

std::string BinaryPath(const std::string& name) {
  const char* bin = std::getenv("COHORT_BIN_DIR");
  const char* tests = std::getenv("COHORT_TEST_BIN_DIR");
  std::string in_bin = absl::StrCat(bin ? bin : "build/bin", "/", name);
  if (::access(in_bin.c_str(), X_OK) == 0) return in_bin;
  return absl::StrCat(tests ? tests : "build/tests", "/", name);
}

WorkerGroup::WorkerGroup(const std::vector<std::string>& argv, const WorkerGroupOptions& options) {
  store_ = comm::TcpStoreServer::Start("127.0.0.1", 0).value();
  char dir_template[] = "/tmp/cohort-workers-XXXXXX";
  dir_ = ::mkdtemp(dir_template);
  const int local_size = options.size / options.machines;
  for (int rank = 0; rank < options.size; ++rank) {
    std::map<std::string, std::string> env = {
        {"COHORT_RANK", std::to_string(rank)},
        {"COHORT_SIZE", std::to_string(options.size)},
        {"COHORT_LOCAL_RANK", std::to_string(rank % local_size)},
        {"COHORT_LOCAL_SIZE", std::to_string(local_size)},
        {"COHORT_CROSS_RANK", std::to_string(rank / local_size)},
        {"COHORT_CROSS_SIZE", std::to_string(options.machines)},
        {"COHORT_CHIEF_ADDR", "127.0.0.1"},
        {"COHORT_RENDEZVOUS_PORT", std::to_string(store_->port())},
        {"OPENBLAS_NUM_THREADS", "1"},
        {"OMP_NUM_THREADS", "1"},
    };
    for (const auto& [k, v] : options.env) env[k] = v;
    if (auto own = options.rank_env.find(rank); own != options.rank_env.end()) {
      for (const auto& [k, v] : own->second) env[k] = v;
    }
    std::string out_path = absl::StrCat(dir_, "/rank", rank, ".log");
    output_files_.push_back(out_path);
    pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    pids_.push_back(pid);
  }
}

WorkerGroup::~WorkerGroup() {
  for (pid_t pid : pids_) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  for (const auto& f : output_files_) ::unlink(f.c_str());
  ::rmdir(dir_.c_str());
}

std::vector<WorkerResult> WorkerGroup::Wait(absl::Duration timeout,
                                            const std::vector<int>& stop_when_others_exit) {
  std::vector<WorkerResult> results(pids_.size());
  absl::Time deadline = absl::Now() + timeout;
  size_t remaining = pids_.size();
  size_t not_waited_for = 0;
  for (int rank : stop_when_others_exit) {
    if (rank >= 0 && rank < static_cast<int>(pids_.size()) && pids_[rank] > 0) ++not_waited_for;
  }
  for (size_t i = 0; i < pids_.size(); ++i) results[i].rank = static_cast<int>(i);
  while (remaining > not_waited_for && absl::Now() < deadline) {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (pids_[i] <= 0) continue;
      int status = 0;
      pid_t r = ::waitpid(pids_[i], &status, WNOHANG);
      if (r == pids_[i]) {
        results[i].exited = true;
        results[i].end_time = absl::Now();
        if (WIFEXITED(status)) results[i].exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) results[i].signal = WTERMSIG(status);
        pids_[i] = -1;
        --remaining;
        if (std::find(stop_when_others_exit.begin(), stop_when_others_exit.end(),
                      static_cast<int>(i)) != stop_when_others_exit.end()) {
          --not_waited_for;
        }
      }
    }
    if (remaining > not_waited_for) absl::SleepFor(absl::Milliseconds(5));
  }
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] > 0) {
      ::kill(pids_[i], SIGKILL);
      ::waitpid(pids_[i], nullptr, 0);
      pids_[i] = -1;
    }
    std::ifstream in(output_files_[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    results[i].output = ss.str();
  }
  return results;
}

std::string Describe(const std::vector<WorkerResult>& results) {
  std::string out;
  for (const auto& r : results) {
    absl::StrAppend(&out, "--- rank ", r.rank, " exited=", r.exited, " code=", r.exit_code,
                    " signal=", r.signal, "\n", r.output, "\n");
  }
  return out;
}

double NumberAfter(const std::string& output, const std::string& marker) {
  size_t at = output.find(marker);
  if (at == std::string::npos) return -1;
  std::vector<std::string> words =
      absl::StrSplit(output.substr(at + marker.size()), absl::ByAnyChar(" :\n"));
  for (const auto& w : words) {
    double value = 0;
    if (absl::SimpleAtod(w, &value)) return value;
  }
  return -1;
}

}  // namespace cohort::testing
