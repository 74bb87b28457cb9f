#include "common/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/small_file.h"

namespace cohort {

namespace {

// The abstract socket name that claims `dir` (its canonical path): "\0cohort-dir/<hash>/<tail>".
// Abstract names live in the kernel, not in the file system, so no `rm` can take the claim.
std::string ClaimName(const std::string& dir) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) canonical = std::filesystem::absolute(dir).lexically_normal().string();
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64
  for (unsigned char c : canonical) hash = (hash ^ c) * 1099511628211ull;
  std::string name = absl::StrCat(std::string(1, '\0'), "cohort-dir/",
                                  absl::Hex(hash, absl::kZeroPad16), "/", canonical);
  return name.substr(0, sizeof(sockaddr_un::sun_path));
}

// Binds the abstract socket `name` (and listens on it, so a second claimant can ask who holds
// it); -1 with errno set when it cannot.
int BindClaim(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// The pid of the process holding the claim `name` (0 when it cannot be told).
pid_t ClaimHolder(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  ucred peer{};
  socklen_t peer_len = sizeof(peer);
  const bool known = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
                     ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) == 0;
  ::close(fd);
  return known ? peer.pid : 0;
}

absl::Status InUse(const std::string& dir, const std::string& holder, const std::string& hint,
                   absl::string_view pid) {
  return absl::FailedPreconditionError(
      absl::StrCat(dir, " is in use by another ", holder,
                   pid.empty() ? "" : absl::StrCat(" (pid ", pid, ")"), "; ", hint));
}

}  // namespace

absl::StatusOr<DirectoryLock> DirectoryLock::Acquire(const std::string& dir,
                                                     const std::string& holder,
                                                     const std::string& hint) {
  // First the claim no deletion of `dir` can drop (a holder whose directory was removed and
  // made again still holds it), then the lock file's flock, which also holds across network
  // namespaces (abstract sockets are per namespace).
  const std::string claim_name = ClaimName(dir);
  const int claim = BindClaim(claim_name);
  if (claim < 0) {
    if (errno != EADDRINUSE) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot claim ", dir, ": ", std::strerror(errno)));
    }
    const pid_t pid = ClaimHolder(claim_name);
    return InUse(dir, holder, hint, pid > 0 ? absl::StrCat(pid) : "");
  }
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    ::close(claim);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(error)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    ::close(claim);
    if (error != EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
    }
    // The holder's pid, for the message; a lock file that holds anything else says nothing.
    const std::string text = ReadSmallFile(path, 64).value_or("");
    return InUse(dir, holder, hint, absl::StripAsciiWhitespace(text));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without it; only a second process's error loses the pid.
    COHORT_LOG(WARNING) << "cannot write this process's pid to " << path << ": "
                        << std::strerror(errno);
  }
  return DirectoryLock(fd, claim);
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
  if (claim_fd_ >= 0) ::close(claim_fd_);
}

}  // namespace cohort
