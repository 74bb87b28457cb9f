#include "cohort/core/checkpoint_context.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cohort/core/train_context.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "common/small_file.h"
#include "wire/limits.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;

// Storage ids are file names: no separators, no hidden or relative names.
absl::Status CheckStorageId(const std::string& id) {
  if (!wire::IsSafeName(id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", absl::CEscape(id.substr(0, 64)),
        "' is not a checkpoint storage id (a name like 3f2b8c1e-9a4d-4e6f-b1a2-7c8d9e0f1a2b)"));
  }
  return absl::OkStatus();
}

// Why writing `path` failed, with the way out when the storage is full.
absl::Status WriteError(const std::string& storage_id, const std::string& what,
                        const std::string& path, int error, const std::string& storage_dir) {
  std::string message =
      absl::StrCat("checkpoint ", storage_id, ": ", what, " ", path, ": ", std::strerror(error));
  if (error == ENOSPC || error == EDQUOT) {
    absl::StrAppend(&message, " (the checkpoint storage ", storage_dir,
                    " is full: the checkpoint was dropped and the latest one before it is kept; "
                    "free space there or give checkpoint_storage more room)");
  }
  return absl::UnavailableError(message);
}

// Writes `bytes` to `path` (created or replaced) and closes it; the errno of what failed.
int WriteAll(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      return error;
    }
    done += static_cast<size_t>(n);
  }
  return ::close(fd) == 0 ? 0 : errno;
}

// fsync of the file or directory `path`; the errno of what failed.
int Sync(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return errno;
  const int error = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  return error == EINVAL ? 0 : error;  // a file system that cannot sync has nothing pending
}

}  // namespace

std::string NewStorageId() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> word;
  uint32_t w[4] = {word(device), word(device), word(device), word(device)};
  w[1] = (w[1] & 0xffff0fffu) | 0x00004000u;  // version 4
  w[2] = (w[2] & 0x3fffffffu) | 0x80000000u;  // variant 1
  return absl::StrFormat("%08x-%04x-%04x-%04x-%04x%08x", w[0], w[1] >> 16, w[1] & 0xffff,
                         w[2] >> 16, w[2] & 0xffff, w[3]);
}

CheckpointContext::Writer::Writer(CheckpointContext* owner, std::string storage_id,
                                  std::string tmp_path, nlohmann::json metadata)
    : owner_(owner),
      storage_id_(std::move(storage_id)),
      tmp_path_(std::move(tmp_path)),
      metadata_(std::move(metadata)) {}

CheckpointContext::Writer::Writer(Writer&& other) noexcept
    : owner_(other.owner_),
      storage_id_(std::move(other.storage_id_)),
      tmp_path_(std::move(other.tmp_path_)),
      metadata_(std::move(other.metadata_)),
      done_(other.done_) {
  other.done_ = true;
}

CheckpointContext::Writer::~Writer() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(tmp_path_, ec);
}

absl::Status CheckpointContext::Writer::WriteFile(const std::string& name,
                                                  const std::string& bytes) {
  if (done_) return absl::FailedPreconditionError("checkpoint already committed");
  const fs::path relative(name);
  if (name.empty() || relative.is_absolute() ||
      std::any_of(relative.begin(), relative.end(), [](const fs::path& p) { return p == ".."; })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", storage_id_, ": '", name, "' is not a relative path inside the checkpoint"));
  }
  const fs::path path = fs::path(tmp_path_) / relative;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return WriteError(storage_id_, "creating", path.parent_path().string(), ec.value(),
                      owner_->storage_dir_);
  }
  if (const int error = WriteAll(path.string(), bytes); error != 0) {
    return WriteError(storage_id_, "writing", path.string(), error, owner_->storage_dir_);
  }
  return absl::OkStatus();
}

absl::Status CheckpointContext::Writer::SyncAll() const {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(tmp_path_, ec), end; !ec && it != end;
       it.increment(ec)) {
    const bool directory = it->is_directory(ec);
    if (!directory && !it->is_regular_file(ec)) continue;
    if (const int error = Sync(it->path().string(), directory); error != 0) {
      return WriteError(storage_id_, "syncing", it->path().string(), error, owner_->storage_dir_);
    }
  }
  if (ec) {
    return WriteError(storage_id_, "listing", tmp_path_, ec.value(), owner_->storage_dir_);
  }
  if (const int error = Sync(tmp_path_, /*directory=*/true); error != 0) {
    return WriteError(storage_id_, "syncing", tmp_path_, error, owner_->storage_dir_);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckpointContext::Writer::Commit() {
  if (done_) return absl::FailedPreconditionError("checkpoint already committed");
  nlohmann::json metadata = metadata_;
  metadata["storage_id"] = storage_id_;
  if (absl::Status s = WriteFile("metadata.json", metadata.dump(2) + "\n"); !s.ok()) return s;
  if (absl::Status s = SyncAll(); !s.ok()) return s;
  if (owner_->remote_ != nullptr) return CommitRemote(metadata);
  const fs::path final_path = fs::path(owner_->storage_dir_) / storage_id_;
  std::error_code ec;
  fs::rename(tmp_path_, final_path, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("checkpoint ", storage_id_, ": renaming ", tmp_path_,
                                               " to ", final_path.string(), ": ", ec.message()));
  }
  done_ = true;
  // The rename itself, made durable before the checkpoint is reported.
  if (const int error = Sync(owner_->storage_dir_, /*directory=*/true); error != 0) {
    return WriteError(storage_id_, "syncing", owner_->storage_dir_, error, owner_->storage_dir_);
  }
  if (absl::Status s =
          owner_->reporter_->ReportCheckpoint(storage_id_, final_path.string(), metadata);
      !s.ok()) {
    return s;
  }
  return storage_id_;
}

absl::StatusOr<std::string> CheckpointContext::Writer::CommitRemote(
    const nlohmann::json& metadata) {
  // Published in the object store before anything is reported. The local files go: the
  // store is the checkpoint (a restore downloads it), and a long run's checkpoints would fill
  // the node's disk.
  if (absl::Status s = owner_->remote_->Store(storage_id_, tmp_path_); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("checkpoint ", storage_id_, ": ", s.message()));
  }
  done_ = true;
  std::error_code ignored;
  fs::remove_all(tmp_path_, ignored);
  COHORT_RETURN_IF_ERROR(owner_->reporter_->ReportCheckpoint(
      storage_id_, owner_->remote_->Location(storage_id_), metadata));
  return storage_id_;
}

absl::StatusOr<CheckpointContext::Writer> CheckpointContext::StorePath(
    const nlohmann::json& metadata) {
  if (reporter_ == nullptr) return NotChiefError(rank_, "stores checkpoints");
  if (!metadata.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint metadata must be a JSON object, got ", metadata.dump().substr(0, 100)));
  }
  std::string id = NewStorageId();
  const fs::path tmp = fs::path(storage_dir_) / absl::StrCat(".", id, ".tmp");
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "checkpoint storage ", storage_dir_, ": cannot create ", tmp.string(), ": ", ec.message()));
  }
  return Writer(this, std::move(id), tmp.string(), metadata);
}

absl::StatusOr<std::string> CheckpointContext::RestorePath(const std::string& which) const {
  std::string storage_id = which;
  if (remote_ != nullptr && absl::StartsWith(which, "s3://")) {
    // A location the master names (a warm start's source): one of this storage's, by its id.
    storage_id = which.substr(which.rfind('/') + 1);
    if (remote_->Location(storage_id) != which) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", which, " is not in this experiment's checkpoint storage (",
          remote_->Describe(), "): a warm start from S3 needs the same bucket and prefix"));
    }
  }
  if (absl::Status s = CheckStorageId(storage_id); !s.ok()) return s;
  const fs::path dir = fs::path(storage_dir_) / storage_id;
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) {
    // A checkpoint is a directory the trial wrote; a link could lead anywhere.
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", storage_id, " in the storage ", storage_dir_,
        " is a symbolic link; only a checkpoint directory is restored"));
  }
  if (!fs::is_directory(dir, ec)) {
    if (remote_ != nullptr) return FetchIntoCache(storage_id);
    return absl::NotFoundError(absl::StrCat("checkpoint ", storage_id, " is not in the storage ",
                                            storage_dir_, " (ls ", storage_dir_,
                                            " lists the stored ones)"));
  }
  return dir.string();
}

absl::StatusOr<std::string> CheckpointContext::FetchIntoCache(const std::string& storage_id) const {
  const fs::path dir = fs::path(storage_dir_) / storage_id;
  const fs::path tmp =
      fs::path(storage_dir_) / absl::StrCat(".", storage_id, ".fetch-", rank_, "-", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("checkpoint ", storage_id, ": creating ",
                                               tmp.string(), ": ", ec.message()));
  }
  if (absl::Status s = remote_->Fetch(storage_id, tmp.string()); !s.ok()) {
    fs::remove_all(tmp, ec);
    return absl::Status(s.code(), absl::StrCat("checkpoint ", storage_id, " from ",
                                               remote_->Describe(), ": ", s.message()));
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    // Another rank of this node fetched it first: its copy is the same checkpoint.
    if (!fs::is_directory(dir, ignored)) {
      return absl::UnavailableError(absl::StrCat("checkpoint ", storage_id, ": renaming ",
                                                 tmp.string(), " to ", dir.string(), ": ",
                                                 ec.message()));
    }
  }
  return dir.string();
}

absl::StatusOr<nlohmann::json> CheckpointContext::GetMetadata(const std::string& storage_id) const {
  absl::StatusOr<std::string> dir = RestorePath(storage_id);
  if (!dir.ok()) return dir.status();
  const std::string path = (fs::path(*dir) / "metadata.json").string();
  // The metadata a user stored (or a checkpoint from elsewhere): bounded like any outside JSON.
  absl::StatusOr<std::string> text = ReadSmallFile(path, wire::kMaxJsonBodyBytes);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", storage_id, ": no ", path));
  }
  if (!text.ok()) return absl::DataLossError(absl::StrCat("checkpoint ", storage_id, ": ",
                                                          text.status().message()));
  absl::StatusOr<nlohmann::json> metadata = ParseJsonBounded(*text);
  if (!metadata.ok()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", storage_id, ": ", path, ": ", metadata.status().message()));
  }
  return metadata;
}

}  // namespace cohort::core
