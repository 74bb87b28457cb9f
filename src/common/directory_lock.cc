#include "common/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/small_file.h"

namespace cohort {

absl::StatusOr<DirectoryLock> DirectoryLock::Acquire(const std::string& dir,
                                                     const std::string& holder,
                                                     const std::string& hint) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
    }
    // The holder's pid, for the message; a lock file that holds anything else says nothing.
    const std::string text = ReadSmallFile(path, 64).value_or("");
    const absl::string_view pid = absl::StripAsciiWhitespace(text);
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is in use by another ", holder,
                     pid.empty() ? "" : absl::StrCat(" (pid ", pid, ")"), "; ", hint));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without it; only a second process's error loses the pid.
    COHORT_LOG(WARNING) << "cannot write this process's pid to " << path << ": "
                        << std::strerror(errno);
  }
  return DirectoryLock(fd);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace cohort
