#include "common/private_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace {

absl::Status Errno(absl::string_view what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

// Writes all of `text` to `fd`.
bool WriteAll(int fd, absl::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::Status WritePrivateFile(const std::string& path, absl::string_view text) {
  const std::string tmp = absl::StrCat(path, ".tmp-", ::getpid());
  ::unlink(tmp.c_str());  // a leftover of a crashed run of this pid
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", tmp);
  const bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  absl::Status status = written ? absl::OkStatus() : Errno("write", tmp);
  if (::close(fd) != 0 && status.ok()) status = Errno("close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) status = Errno("replace", path);
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

}  // namespace cohort
