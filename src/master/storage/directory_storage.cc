#include "master/storage/directory_storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/beneath.h"

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;

constexpr char kTmpPrefix[] = ".tmp-";
constexpr char kDeletedPrefix[] = ".deleted-";

absl::Status Errno(const std::string& what, int error) {
  const std::string text = absl::StrCat(what, ": ", std::strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(
        text + " (the storage is full: free space there or raise its quota, then try again)");
  }
  return absl::UnavailableError(text);
}

// Copies the regular file `from` to the new entry `name` of `dir_fd`.
absl::Status CopyFile(const fs::path& from, int dir_fd, const std::string& name,
                      const std::string& what) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (in.get() < 0) return Errno(absl::StrCat(what, ": reading ", from.string()), errno);
  UniqueFd out(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600));
  if (out.get() < 0) return Errno(absl::StrCat(what, ": creating ", name), errno);
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(in.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(absl::StrCat(what, ": reading ", from.string()), errno);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buffer + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno(absl::StrCat(what, ": writing ", name), errno);
      done += w;
    }
  }
  if (::fsync(out.get()) != 0) return Errno(absl::StrCat(what, ": syncing ", name), errno);
  return absl::OkStatus();
}

// Copies the tree under `from_dir` into the directory `dest_fd`: directories and regular files
// only (anything else is InvalidArgument naming it), opening every destination beneath
// `dest_fd` without following a link.
absl::Status CopyTreeInto(const fs::path& from_dir, int dest_fd, const std::string& what) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(from_dir);
    const fs::file_status status = it->symlink_status(ec);
    if (ec) break;
    std::unique_ptr<UniqueFd> parent;
    int parent_fd = dest_fd;
    if (!rel.parent_path().empty()) {
      COHORT_ASSIGN_OR_RETURN(UniqueFd opened,
                              OpenDirectoryBeneath(dest_fd, rel.parent_path().string()));
      parent = std::make_unique<UniqueFd>(std::move(opened));
      parent_fd = parent->get();
    }
    const std::string name = rel.filename().string();
    if (fs::is_directory(status)) {
      if (::mkdirat(parent_fd, name.c_str(), 0700) != 0) {
        return Errno(absl::StrCat(what, ": creating ", rel.string()), errno);
      }
    } else if (fs::is_regular_file(status)) {
      COHORT_RETURN_IF_ERROR(CopyFile(it->path(), parent_fd, name, what));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", it->path().string(),
                       " is not a regular file or a directory (a symbolic link?): only those "
                       "are stored"));
    }
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(what, ": reading ", from_dir.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

// The names in the directory `dir_fd`.
absl::StatusOr<std::vector<std::string>> NamesIn(int dir_fd, const std::string& what) {
  const int copy = ::dup(dir_fd);
  if (copy < 0) return Errno(what, errno);
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    const int error = errno;
    ::close(copy);
    return Errno(what, error);
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string DirectoryStorage::Location(const std::string& id) const {
  return (std::filesystem::path(dir_) / id).lexically_normal().string();
}

absl::Status DirectoryStorage::CheckId(const std::string& id) const {
  if (!IsPlainVisibleName(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint id '", id.substr(0, 80), "' in ", Describe(),
                     ": must be one plain name, not starting with '.'"));
  }
  return absl::OkStatus();
}

absl::Status DirectoryStorage::Check(const std::string& id) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  absl::StatusOr<UniqueFd> dir = roots_.OpenDir(dir_, id);
  if (absl::IsNotFound(dir.status())) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", id, " is not in ", Describe()));
  }
  return dir.status();
}

absl::Status DirectoryStorage::Store(const std::string& id, const std::string& from_dir) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  const std::string what = absl::StrCat("storing checkpoint ", id, " in ", Describe());
  COHORT_ASSIGN_OR_RETURN(UniqueFd root, roots_.OpenDir(dir_, ""));
  struct stat st;
  if (::fstatat(root.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return absl::AlreadyExistsError(absl::StrCat(what, ": it is stored already"));
  }
  const std::string tmp = absl::StrCat(kTmpPrefix, id, "-", ::getpid());
  if (::mkdirat(root.get(), tmp.c_str(), 0700) != 0) return Errno(what, errno);
  absl::Status copied = [&]() -> absl::Status {
    COHORT_ASSIGN_OR_RETURN(UniqueFd dest, OpenDirectoryBeneath(root.get(), tmp));
    return CopyTreeInto(from_dir, dest.get(), what);
  }();
  if (copied.ok() &&
      ::renameat2(root.get(), tmp.c_str(), root.get(), id.c_str(), RENAME_NOREPLACE) != 0) {
    copied = errno == EEXIST ? absl::AlreadyExistsError(absl::StrCat(what, ": it is stored already"))
                             : Errno(what, errno);
  }
  if (!copied.ok()) {
    if (absl::Status removed = RemoveTreeAt(root.get(), tmp); !removed.ok()) {
      return absl::Status(copied.code(),
                          absl::StrCat(copied.message(), "; and ", removed.message()));
    }
  }
  return copied;
}

absl::StatusOr<CheckpointListing> DirectoryStorage::Open(const std::string& id,
                                                         int64_t max_entries) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  absl::StatusOr<UniqueFd> dir = roots_.OpenDir(dir_, id);
  if (absl::IsNotFound(dir.status())) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", id, " is not in ", Describe()));
  }
  COHORT_RETURN_IF_ERROR(dir.status());
  auto handle = std::make_shared<UniqueFd>(*std::move(dir));
  CheckpointListing listing{.id = id, .local_dir = handle->ProcPath(), .keep = handle};
  const fs::path top(listing.local_dir);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(top);
    const fs::file_status status = it->symlink_status(ec);
    if (ec) break;
    if (!fs::is_directory(status) && !fs::is_regular_file(status)) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint ", id, " in ", Describe(), ": ", rel.string(),
                       " is not a regular file or a directory (a symbolic link?); it is not read"));
    }
    listing.entries.push_back(rel.string());
    if (fs::is_regular_file(status)) listing.bytes += static_cast<int64_t>(it->file_size(ec));
    if (static_cast<int64_t>(listing.entries.size()) > max_entries) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint ", id, " has more than ", max_entries, " files; copy ",
                       (fs::path(dir_) / id).string(), " directly"));
    }
  }
  if (ec) {
    return absl::UnavailableError(absl::StrCat("reading checkpoint ", id, " in ", Describe(), ": ",
                                               ec.message()));
  }
  return listing;
}

absl::Status DirectoryStorage::Fetch(const std::string& id, const std::string& into_dir) {
  COHORT_ASSIGN_OR_RETURN(CheckpointListing listing,
                          Open(id, std::numeric_limits<int64_t>::max()));
  COHORT_ASSIGN_OR_RETURN(UniqueFd into, OpenDirectory(into_dir));
  return CopyTreeInto(listing.local_dir, into.get(),
                      absl::StrCat("fetching checkpoint ", id, " from ", Describe()));
}

absl::StatusOr<std::vector<std::string>> DirectoryStorage::List() {
  absl::StatusOr<UniqueFd> root = roots_.OpenDir(dir_, "");
  if (absl::IsNotFound(root.status())) return std::vector<std::string>{};
  COHORT_RETURN_IF_ERROR(root.status());
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          NamesIn(root->get(), "listing " + Describe()));
  std::vector<std::string> ids;
  for (const std::string& name : names) {
    struct stat st;
    if (absl::StartsWith(name, ".") ||
        ::fstatat(root->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode)) {
      continue;  // a leftover, a link or a file: no checkpoint
    }
    ids.push_back(name);
  }
  return ids;
}

absl::Status DirectoryStorage::Delete(const std::string& id) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  absl::StatusOr<UniqueFd> root = roots_.OpenDir(dir_, "");
  if (absl::IsNotFound(root.status())) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(root.status());
  struct stat st;
  if (::fstatat(root->get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(absl::StrCat("deleting checkpoint ", id, " in ", Describe()), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", id, " in ", Describe(),
                     " is not a directory (a symbolic link?): left as it is"));
  }
  // Renamed aside first (cheap, atomic: List and Open no longer see it), then removed.
  const std::string doomed = absl::StrCat(kDeletedPrefix, id);
  COHORT_RETURN_IF_ERROR(RemoveTreeAt(root->get(), doomed));  // an older attempt's
  if (::renameat(root->get(), id.c_str(), root->get(), doomed.c_str()) != 0) {
    return Errno(absl::StrCat("deleting checkpoint ", id, " in ", Describe()), errno);
  }
  return RemoveTreeAt(root->get(), doomed);
}

absl::StatusOr<std::vector<std::string>> DirectoryStorage::SweepLeftovers() {
  absl::StatusOr<UniqueFd> root = roots_.OpenDir(dir_, "");
  if (absl::IsNotFound(root.status())) return std::vector<std::string>{};
  COHORT_RETURN_IF_ERROR(root.status());
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          NamesIn(root->get(), "listing " + Describe()));
  std::vector<std::string> removed;
  for (const std::string& name : names) {
    if (!absl::StartsWith(name, kTmpPrefix) && !absl::StartsWith(name, kDeletedPrefix)) continue;
    COHORT_RETURN_IF_ERROR(RemoveTreeAt(root->get(), name));
    removed.push_back(name);
  }
  return removed;
}

}  // namespace cohort::master::storage
