#include "comm/internal/shm_sync.h"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>

namespace cohort::comm::internal {

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return;
  struct timespec ts = absl::ToTimespec(timeout);
  // std::atomic<uint32_t> is a plain 32-bit word on Linux/x86-64 (static_assert in the caller's
  // layout), so its address is a valid futex.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
            0);
}

PeerProcess::PeerProcess(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#endif
}

PeerProcess::PeerProcess(PeerProcess&& other) noexcept : pid_(other.pid_), pidfd_(other.pidfd_) {
  other.pidfd_ = -1;
}

PeerProcess& PeerProcess::operator=(PeerProcess&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) ::close(pidfd_);
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    other.pidfd_ = -1;
  }
  return *this;
}

PeerProcess::~PeerProcess() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool PeerProcess::Exited() const {
  if (pid_ <= 0) return false;
  if (pidfd_ >= 0) {
    struct pollfd p = {pidfd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)) != 0;
  }
  if (::kill(pid_, 0) != 0 && errno == ESRCH) return true;
  // kill() succeeds on a zombie that its parent has not reaped yet.
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() &&
         (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 1;
  }
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

}  // namespace cohort::comm::internal
