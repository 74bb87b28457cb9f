#pragma once
// DirectoryLock: an exclusive claim on a directory by one process (a flock on a file in it, with
// the holder's pid written inside for the error of whoever comes second), held until the lock
// is destroyed or the process ends, however it ends (SIGKILL included: the kernel drops it).
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
  DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace cohort
