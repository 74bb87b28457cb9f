#pragma once
// DirectoryLock: an exclusive claim on a directory by one process, held until the lock is
// destroyed or the process ends, however it ends (SIGKILL included: the kernel drops it). Two
// holds together: an abstract Unix socket named after the directory's canonical path, which
// lives in the kernel, so deleting the directory (and making it again) cannot drop it; and a
// flock on DIR/.lock with the holder's pid inside, which also holds across network namespaces
// (abstract sockets are per namespace). Whoever comes second is told the holder's pid.
// The master holds its data directory, an agent its work directory: two of them on one
// directory would undo each other's work.
// Thread-compatible; movable, not copyable.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(DirectoryLock lock,
//                           DirectoryLock::Acquire(dir, "cohort-agent", "give each agent its own
//                           --work-dir"));

#include <string>

#include "absl/status/statusor.h"

namespace cohort {

class DirectoryLock {
 public:
  // Locks `dir` (which must exist) through `dir`/.lock. When another process holds it:
  // FailedPrecondition "<dir> is in use by another <holder> (pid N); <hint>". Other failures
  // (the file cannot be opened or locked) are FailedPrecondition naming the file.
  static absl::StatusOr<DirectoryLock> Acquire(const std::string& dir, const std::string& holder,
                                               const std::string& hint);
  DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_), claim_fd_(other.claim_fd_) {
    other.fd_ = -1;
    other.claim_fd_ = -1;
  }
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  DirectoryLock(int fd, int claim_fd) : fd_(fd), claim_fd_(claim_fd) {}
  int fd_ = -1;        // DIR/.lock, flocked
  int claim_fd_ = -1;  // the abstract socket bound to the directory's name
};

}  // namespace cohort
