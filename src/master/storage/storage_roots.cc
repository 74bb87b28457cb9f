#include "master/storage/storage_roots.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"

namespace cohort::master::storage {
namespace {

namespace fs = std::filesystem;

// `path` made normal, without a trailing separator ("/a/b/" -> "/a/b").
std::string Normal(const std::string& path) {
  std::string normal = fs::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

// The plain path from `root` to `path` ("" when equal); nullopt when `path` is not in `root`.
std::optional<std::string> RelativeTo(const std::string& path, const std::string& root) {
  const fs::path rel = fs::path(path).lexically_relative(root);
  if (rel.empty()) return std::nullopt;
  const std::string text = rel.string();
  if (text == ".") return std::string();
  if (!IsPlainRelativePath(text)) return std::nullopt;
  return text;
}

bool Within(const std::string& path, const std::string& dir) {
  return RelativeTo(path, dir).has_value();
}

// The canonical path of `path`, its missing tail kept as given.
std::string Canonical(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? Normal(path) : Normal(canonical.string());
}

absl::Status CheckExtraRoot(const std::string& root, const std::string& data_dir) {
  const std::string flag = "--checkpoint-storage-roots";
  if (root.empty() || root[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", root, "' is not an absolute path"));
  }
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", root, " is not a directory (create it, or mount the storage there first)"));
  }
  const std::string canonical = Canonical(root);
  if (Within(data_dir, canonical)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", root, " holds the master's data directory ", data_dir,
        ": trials could then reach the master's database and secrets; allow a directory "
        "beside it instead"));
  }
  if (Within(canonical, data_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", root, " lies inside the master's data directory ", data_dir,
                     "; its default storage ", data_dir, "/checkpoints is allowed already"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StorageRoots> StorageRoots::Create(const std::string& data_dir,
                                                  const std::vector<std::string>& extra_roots) {
  const std::string absolute = Normal(fs::absolute(data_dir).string());
  const std::string data = Canonical(absolute);
  const std::string fallback = (fs::path(absolute) / "checkpoints").string();
  std::error_code ec;
  fs::create_directories(fallback, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("creating the default checkpoint storage ", fallback, ": ", ec.message()));
  }
  std::vector<Root> roots = {{fallback, Canonical(fallback)}};
  for (const std::string& given : extra_roots) {
    COHORT_RETURN_IF_ERROR(CheckExtraRoot(given, data));
    roots.push_back({Normal(given), Canonical(given)});
  }
  return StorageRoots(std::move(roots));
}

std::vector<std::string> StorageRoots::roots() const {
  std::vector<std::string> out;
  for (const Root& root : roots_) out.push_back(root.given);
  return out;
}

std::string StorageRoots::Describe() const { return absl::StrJoin(roots(), ", "); }

absl::StatusOr<std::pair<std::string, std::string>> StorageRoots::Locate(
    const std::string& dir) const {
  if (!dir.empty() && dir[0] == '/') {
    const std::string normal = Normal(dir);
    for (const Root& root : roots_) {
      for (const std::string& base : {root.given, root.canonical}) {
        if (std::optional<std::string> rel = RelativeTo(normal, base)) {
          return std::make_pair(base, *rel);
        }
      }
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(dir.empty() ? "(none)" : dir,
                   " is outside the checkpoint storage roots this master allows (", Describe(),
                   ")"));
}

absl::Status StorageRoots::CheckStorageDir(absl::string_view field, const std::string& dir) const {
  absl::StatusOr<std::pair<std::string, std::string>> located = Locate(dir);
  if (!located.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", located.status().message(),
                     ": store checkpoints in one of them, or ask an administrator to allow "
                     "this one (cohort-master --checkpoint-storage-roots)"));
  }
  // Whatever of it exists already must not lead elsewhere through a link.
  const std::string canonical = Canonical(dir);
  for (const Root& root : roots_) {
    if (Within(canonical, root.canonical)) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", dir, " leads to ", canonical,
      " through a symbolic link, outside the checkpoint storage roots this master allows (",
      Describe(), ")"));
}

absl::StatusOr<UniqueFd> StorageRoots::OpenDir(const std::string& storage_dir,
                                               absl::string_view relative) const {
  if (!IsPlainRelativePath(relative)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative, "' is not a path inside a checkpoint storage"));
  }
  COHORT_ASSIGN_OR_RETURN(auto located, Locate(storage_dir));
  COHORT_ASSIGN_OR_RETURN(UniqueFd root, OpenDirectory(located.first));
  const std::string path =
      located.second.empty() ? std::string(relative)
      : relative.empty()     ? located.second
                             : absl::StrCat(located.second, "/", relative);
  absl::StatusOr<UniqueFd> dir = OpenDirectoryBeneath(root.get(), path);
  if (absl::IsFailedPrecondition(dir.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("in the checkpoint storage root ", located.first, ": ",
                     dir.status().message()));
  }
  return dir;
}

absl::Status StorageRoots::Remove(const std::string& storage_dir,
                                  absl::string_view relative) const {
  if (relative.empty() || !IsPlainRelativePath(relative)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative, "' is not a path inside a checkpoint storage"));
  }
  const fs::path path{std::string(relative)};
  absl::StatusOr<UniqueFd> parent = OpenDir(storage_dir, path.parent_path().string());
  if (absl::IsNotFound(parent.status())) return absl::OkStatus();  // nothing there to remove
  COHORT_RETURN_IF_ERROR(parent.status());
  absl::Status removed = RemoveTreeAt(parent->get(), path.filename().string());
  if (!removed.ok()) {
    return absl::Status(removed.code(), absl::StrCat("in ", storage_dir, ": ", removed.message()));
  }
  return absl::OkStatus();
}

absl::Status StorageRoots::Rename(const std::string& storage_dir, const std::string& from,
                                  const std::string& to) const {
  for (const std::string& name : {from, to}) {
    if (!IsPlainName(name)) {
      return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not one plain name"));
    }
  }
  COHORT_ASSIGN_OR_RETURN(UniqueFd dir, OpenDir(storage_dir, ""));
  if (::renameat(dir.get(), from.c_str(), dir.get(), to.c_str()) != 0) {
    const int error = errno;
    const std::string message = absl::StrCat("renaming ", from, " to ", to, " in ", storage_dir,
                                             ": ", std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
  }
  return absl::OkStatus();
}

}  // namespace cohort::master::storage
