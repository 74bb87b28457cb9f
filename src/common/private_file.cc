#include "common/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/small_file.h"

namespace cohort {
namespace {

// Why `what` failed on `path` (a write of `needed` bytes): a full disk or quota says so, with
// the directory, the bytes needed and free.
absl::Status Errno(absl::string_view what, const std::string& path, size_t needed = 0) {
  const int error = errno;
  if (error == ENOSPC || error == EDQUOT) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    struct statvfs fs_stat {};
    const std::string free_bytes =
        ::statvfs(dir.empty() ? "." : dir.c_str(), &fs_stat) == 0
            ? absl::StrCat(static_cast<uint64_t>(fs_stat.f_bavail) * fs_stat.f_frsize)
            : std::string("unknown");
    return absl::ResourceExhaustedError(
        absl::StrCat(error == ENOSPC ? "no space left on device" : "disk quota exceeded",
                     " in ", dir, " writing ", std::filesystem::path(path).filename().string(),
                     " (needed ", needed, " bytes, free ", free_bytes, "): free space there"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error)));
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
  absl::Status status = written ? absl::OkStatus() : Errno("write", tmp, text.size());
  if (::close(fd) != 0 && status.ok()) status = Errno("close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) status = Errno("replace", path);
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT)
      return absl::NotFoundError(absl::StrCat("secret file ", path, " does not exist"));
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", path, ": ", std::strerror(errno)));
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("secret file ", path, " may be read or changed by other users (mode ",
                     absl::StrFormat("%04o", info.st_mode & 07777),
                     "): make it private with `chmod 600 ", path, "`"));
  }
  // A secret is a line of 64 hex digits; anything much larger is not one.
  absl::StatusOr<std::string> text = ReadSmallFile(path, 64u << 10);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", path, " cannot be read: ", text.status().message()));
  }
  const std::string secret(absl::StripAsciiWhitespace(*text));
  if (secret.empty())
    return absl::InvalidArgumentError(absl::StrCat("secret file ", path, " is empty"));
  return secret;
}

}  // namespace cohort
