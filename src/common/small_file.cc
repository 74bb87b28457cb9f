#include "common/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace {

absl::Status TooLarge(const std::string& path, size_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, " holds more than ", max_bytes, " bytes, the most read of it"));
}

absl::Status SystemError(const std::string& what, const std::string& path, int error) {
  if (error == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  return absl::FailedPreconditionError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error)));
}

}  // namespace

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError("open", path, errno);
  struct stat info {};
  if (::fstat(fd, &info) != 0 || S_ISDIR(info.st_mode)) {
    const int error = S_ISDIR(info.st_mode) ? EISDIR : errno;
    ::close(fd);
    return SystemError("read", path, error);
  }
  // /proc files say 0 here and are read to their end; a regular file's size is checked first.
  if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return TooLarge(path, max_bytes);
  }
  std::string text;
  char buffer[64 << 10];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return SystemError("read", path, error);
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return TooLarge(path, max_bytes);
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace cohort
