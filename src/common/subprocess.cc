#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace cohort {
namespace {

int StatusOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("Subprocess: empty argv");
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [name, value] : options.env) {
    if (value) env[name] = *value;
    else env.erase(name);
  }
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, argv;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string exec_failed = absl::StrCat("cannot execute ", options.argv[0], "\n");
  const std::string chdir_failed = absl::StrCat("cannot change to directory ", options.cwd, "\n");

  const pid_t parent = ::getpid();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return absl::UnavailableError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    if (options.new_process_group) ::setpgid(0, 0);
    if (options.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
    }
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const int dev_null = ::open("/dev/null", O_RDONLY);
    if (dev_null >= 0) ::dup2(dev_null, STDIN_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);  // the agent and the CLI ignore it; what they start must not
    // In the child a failed write of these messages leaves only exit status 127 to tell.
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
      ssize_t ignored = ::write(STDERR_FILENO, chdir_failed.data(), chdir_failed.size());
      (void)ignored;
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    ssize_t ignored = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    (void)ignored;
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  if (options.new_process_group) ::setpgid(pid, pid);  // also done by the child
  ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  std::unique_ptr<Subprocess> child(new Subprocess());
  child->pid_ = pid;
  child->out_fd_ = pipe_fds[0];
  child->group_ = options.new_process_group;
  return child;
}

Subprocess::~Subprocess() {
  if (out_fd_ >= 0) ::close(out_fd_);
  if (pid_ > 0 && !Poll().has_value()) {
    Signal(SIGKILL);
    int wait_status = 0;
    ::waitpid(pid_, &wait_status, 0);
  }
}

bool Subprocess::ReadAvailable(std::string* out, absl::Duration timeout, size_t max_bytes) {
  if (out_fd_ < 0) return false;
  pollfd fd = {out_fd_, POLLIN, 0};
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  if (::poll(&fd, 1, ms) <= 0) return true;
  char buffer[65536];
  for (size_t taken = 0; taken < max_bytes;) {
    const ssize_t n = ::read(out_fd_, buffer, std::min(sizeof(buffer), max_bytes - taken));
    if (n > 0) {
      out->append(buffer, static_cast<size_t>(n));
      taken += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(out_fd_);  // EOF or a read error: the output is over
    out_fd_ = -1;
    return false;
  }
  return true;  // max_bytes taken: the rest waits in the pipe
}

void Subprocess::Signal(int signal) {
  if (pid_ <= 0 || status_.has_value()) return;
  if (!group_ || ::kill(-pid_, signal) != 0) ::kill(pid_, signal);
}

std::optional<int> Subprocess::Poll() {
  if (status_.has_value() || pid_ <= 0) return status_;
  int wait_status = 0;
  if (::waitpid(pid_, &wait_status, WNOHANG) == pid_) status_ = StatusOf(wait_status);
  return status_;
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!Poll().has_value()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "process ", pid_, " still running after ", absl::FormatDuration(timeout)));
    }
    ::usleep(20000);
  }
  return *status_;
}

}  // namespace cohort
