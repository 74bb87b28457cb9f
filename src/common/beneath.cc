#include "common/beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cohort {
namespace {

absl::Status Errno(int error, absl::string_view what, absl::string_view path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == ELOOP || error == ENOTDIR) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is a symbolic link or not a directory (no link is followed "
                           "here)"));
  }
  return absl::UnavailableError(message);
}

// Removes everything in the open directory `fd` (which it closes), `depth` levels down.
absl::Status EmptyDirectory(int fd, const std::string& shown, int depth) {
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int error = errno;
    ::close(fd);
    return Errno(error, "listing", shown);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = ::readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  absl::Status status = absl::OkStatus();
  for (const std::string& name : names) {
    struct stat st;
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      status = Errno(errno, "reading", absl::StrCat(shown, "/", name));
      break;
    }
    const std::string child = absl::StrCat(shown, "/", name);
    if (S_ISDIR(st.st_mode)) {
      if (depth >= kMaxRemoveDepth) {
        status = absl::UnavailableError(absl::StrCat(child, " is more than ", kMaxRemoveDepth,
                                                     " directories deep: remove it by hand"));
        break;
      }
      const int sub = ::openat(::dirfd(dir), name.c_str(),
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        status = Errno(errno, "opening", child);
        break;
      }
      status = EmptyDirectory(sub, child, depth + 1);
      if (!status.ok()) break;
    }
    if (::unlinkat(::dirfd(dir), name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
        errno != ENOENT) {
      status = Errno(errno, "removing", child);
      break;
    }
  }
  ::closedir(dir);
  return status;
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

std::string UniqueFd::ProcPath() const { return absl::StrCat("/proc/self/fd/", fd_); }

bool IsPlainName(absl::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(absl::string_view("/\0", 2)) == absl::string_view::npos;
}

bool IsPlainVisibleName(absl::string_view name) {
  return IsPlainName(name) && name.size() <= 255 && name.front() != '.';
}

bool IsPlainRelativePath(absl::string_view relative) {
  if (relative.empty()) return true;
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    if (!IsPlainName(part)) return false;
  }
  return true;
}

absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOTDIR) {
      return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
    }
    return Errno(error, "opening", path);
  }
  return UniqueFd(fd);
}

absl::StatusOr<UniqueFd> OpenDirectoryBeneath(int dir_fd, absl::string_view relative) {
  if (!IsPlainRelativePath(relative)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", relative, "' is not a relative path of plain components (no '..', no '.')"));
  }
  UniqueFd current(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (current.get() < 0) return Errno(errno, "duplicating the descriptor of", relative);
  std::string walked;
  if (relative.empty()) return current;
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    absl::StrAppend(&walked, walked.empty() ? "" : "/", part);
    const int next = ::openat(current.get(), std::string(part).c_str(),
                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return Errno(errno, "opening", walked);
    current = UniqueFd(next);
  }
  return current;
}

absl::Status RemoveTreeAt(int dir_fd, const std::string& name) {
  if (!IsPlainName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not one plain name"));
  }
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(errno, "reading", name);
  }
  if (S_ISDIR(st.st_mode)) {
    const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Errno(errno, "opening", name);
    if (absl::Status s = EmptyDirectory(fd, name, 1); !s.ok()) return s;
  }
  if (::unlinkat(dir_fd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
      errno != ENOENT) {
    return Errno(errno, "removing", name);
  }
  return absl::OkStatus();
}

}  // namespace cohort
