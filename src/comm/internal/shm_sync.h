#pragma once
// Low-level waiting primitives for ShmCommunicator: futexes on 32-bit words inside a
// MAP_SHARED segment (shared futexes: FUTEX_WAIT without FUTEX_PRIVATE_FLAG, so waiters in
// different processes meet), a watch on a peer process that notices its exit, and the number of
// cores this process may run on. Thread-safe unless noted.

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace cohort::comm::internal {

// Sleeps while *word == expected, at most `timeout`. Returns early on a wake, a change of the
// word, or a signal; callers re-check their condition in a loop.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, absl::Duration timeout);
// Wakes every waiter on `word`, in any process.
void FutexWakeAll(std::atomic<uint32_t>* word);

// Watches one peer process for exit. Uses a pidfd (Linux 5.3+), which also reports exits of
// processes that are not our children and cannot be fooled by pid reuse; falls back to
// kill(pid, 0) plus the zombie state in /proc/<pid>/stat. Move-only; thread-compatible.
class PeerProcess {
 public:
  PeerProcess() = default;
  explicit PeerProcess(pid_t pid);
  PeerProcess(PeerProcess&& other) noexcept;
  PeerProcess& operator=(PeerProcess&& other) noexcept;
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;
  ~PeerProcess();

  pid_t pid() const { return pid_; }
  // True once the process has exited (or is a zombie). Costs one poll(2) or kill(2) call.
  bool Exited() const;

 private:
  pid_t pid_ = 0;
  int pidfd_ = -1;
};

// CPUs in this process's affinity mask (sched_getaffinity); at least 1.
int UsableCores();

}  // namespace cohort::comm::internal
