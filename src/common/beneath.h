#pragma once
// Paths beneath a directory, opened and removed without ever following a symbolic link, so a
// path that another process may change meanwhile (a trial writing to shared checkpoint storage)
// cannot lead outside the directory between a check and its use. Each component is opened
// with openat(O_NOFOLLOW) from the one before it; nothing is resolved by path name.
//
// Thread-safe: no shared state; never changes the working directory.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(UniqueFd root, OpenDirectory("/srv/checkpoints"));
//   COHORT_ASSIGN_OR_RETURN(UniqueFd exp, OpenDirectoryBeneath(root.get(), "team-a/exp-3"));
//   COHORT_RETURN_IF_ERROR(RemoveTreeAt(exp.get(), "3f2b8c1e-9a4d-4e6f-b1a2-7c8d9e0f1a2b"));

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {

// An open file descriptor, closed when destroyed; -1 holds none.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  // "/proc/self/fd/N": a path that names the open directory itself, whatever its path now.
  std::string ProcPath() const;

 private:
  int fd_ = -1;
};

// Whether `name` is one plain component: not empty, no '/', not "." or "..".
bool IsPlainName(absl::string_view name);

// Whether `name` may name a stored entry of its own (a checkpoint id in every checkpoint
// storage): a plain name of at most 255 bytes that does not start with '.' (dot-entries are a
// storage's own: temporaries, marks, leftovers).
bool IsPlainVisibleName(absl::string_view name);

// Whether `relative` is made only of plain components: not absolute, no empty, "." or ".."
// component ("" is the directory itself, and plain).
bool IsPlainRelativePath(absl::string_view relative);

// Opens the directory at `path` (an absolute path an administrator gave: links in it are
// followed). NotFound when missing, FailedPrecondition when not a directory.
absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path);

// Opens the directory `relative` (plain components; "": `dir_fd` itself) beneath `dir_fd`,
// following no symbolic link. InvalidArgument for a path that is not plain; NotFound when a
// component is missing; FailedPrecondition naming the component that is a symbolic link or not
// a directory.
absl::StatusOr<UniqueFd> OpenDirectoryBeneath(int dir_fd, absl::string_view relative);

// The deepest tree RemoveTreeAt removes (a deeper one is refused, not recursed into).
inline constexpr int kMaxRemoveDepth = 256;

// Removes the entry `name` of the directory `dir_fd` (a file, a link or a directory with
// everything under it); links are removed, never followed. OK when it does not exist;
// InvalidArgument for a name that is not one plain component; Unavailable naming what could
// not be removed and why.
absl::Status RemoveTreeAt(int dir_fd, const std::string& name);

}  // namespace cohort
