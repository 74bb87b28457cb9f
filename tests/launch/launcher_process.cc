#include "tests/launch/launcher_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/time/clock.h"

namespace cohort::testing {

LauncherProcess::LauncherProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::optional<std::string>>& env) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) std::abort();
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    for (const auto& [name, value] : env) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

LauncherProcess::~LauncherProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

bool LauncherProcess::ReadSome(absl::Duration timeout) {
  pollfd fds[2];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (n == 0) return false;
  if (::poll(fds, n, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    char buf[65536];
    ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
    bool is_out = fds[i].fd == out_fd_;
    if (got > 0) {
      (is_out ? out_ : err_).append(buf, static_cast<size_t>(got));
    } else {
      ::close(fds[i].fd);
      (is_out ? out_fd_ : err_fd_) = -1;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

bool LauncherProcess::WaitFor(
    const std::function<bool(const std::string&, const std::string&)>& done,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done(out_, err_)) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    if (!ReadSome(std::min(left, absl::Milliseconds(100))) && !done(out_, err_)) return false;
  }
  return true;
}

LaunchResult LauncherProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  LaunchResult result;
  while (absl::Now() < deadline && ReadSome(std::min(deadline - absl::Now(),
                                                     absl::Milliseconds(100)))) {
  }
  // The pipes are closed (or the deadline passed): wait for the exit itself.
  while (pid_ > 0) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      result.exited = true;
      result.end_time = absl::Now();
      result.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      pid_ = -1;
      break;
    }
    if (absl::Now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
      break;
    }
    ::poll(nullptr, 0, 10);
  }
  result.out = out_;
  result.err = err_;
  return result;
}

LaunchResult RunToCompletion(const std::vector<std::string>& argv,
                             const std::map<std::string, std::optional<std::string>>& env,
                             absl::Duration timeout) {
  LauncherProcess process(argv, env);
  return process.Wait(timeout);
}

int CountOf(const std::string& haystack, const std::string& needle) {
  int count = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

}  // namespace cohort::testing
