#include "objstore/s3_checkpoints.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/beneath.h"
#include "nlohmann/json.hpp"

namespace cohort::objstore {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr int64_t kMaxManifestBytes = 64 << 20;  // a million entries and then some
constexpr int64_t kMaxObjectsPerCheckpoint = 1000000;

// A path from a manifest, which a trial's chief may have written: relative, plain components.
bool SafeRelative(const std::string& path) {
  return !path.empty() && path.size() <= 4096 && IsPlainRelativePath(path);
}

}  // namespace

S3Checkpoints::S3Checkpoints(std::shared_ptr<S3Client> client, std::string prefix)
    : client_(std::move(client)), prefix_(std::move(prefix)) {
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
}

std::string S3Checkpoints::Describe() const {
  return prefix_.empty() ? client_->Describe() : absl::StrCat(client_->Describe(), " prefix ",
                                                              prefix_);
}

absl::Status S3Checkpoints::CheckId(const std::string& id) const {
  if (!IsPlainVisibleName(id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint id '", id.substr(0, 80), "' in ", Describe(),
                     ": must be one plain name, not starting with '.'"));
  }
  return absl::OkStatus();
}

std::string S3Checkpoints::KeyOf(const std::string& id, const std::string& path) const {
  return absl::StrCat(prefix_, prefix_.empty() ? "" : "/", id, "/", path);
}

std::string S3Checkpoints::Location(const std::string& id) const {
  return client_->Url(absl::StrCat(prefix_, prefix_.empty() ? "" : "/", id));
}

std::string S3Checkpoints::TopKey(const std::string& id, const char* suffix) const {
  return absl::StrCat(prefix_, prefix_.empty() ? "" : "/", id, suffix);
}

std::string S3Checkpoints::ManifestKey(const std::string& id) const {
  return TopKey(id, kManifestSuffix);
}

absl::Status S3Checkpoints::Check(const std::string& id) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> size, client_->Head(ManifestKey(id)));
  if (!size.has_value()) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", id, " is not in ", Describe()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<S3Checkpoints::Entry>> S3Checkpoints::LocalEntries(const std::string& from_dir) {
  std::vector<Entry> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::file_status status = it->symlink_status(ec);
    const std::string rel = fs::relative(it->path(), from_dir, ec).string();
    if (fs::is_directory(status)) {
      entries.push_back({rel, true, 0});
    } else if (fs::is_regular_file(status)) {
      entries.push_back({rel, false, static_cast<int64_t>(it->file_size(ec))});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(it->path().string(),
                       " is not a regular file or a directory (a symbolic link?): only those "
                       "are stored"));
    }
  }
  if (ec) return absl::UnavailableError(absl::StrCat("reading ", from_dir, ": ", ec.message()));
  // Directories before what they hold: sorted paths do that ("meta" < "meta/step.json").
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  return entries;
}

absl::Status S3Checkpoints::Store(const std::string& id, const std::string& from_dir) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  COHORT_ASSIGN_OR_RETURN(std::vector<Entry> entries, LocalEntries(from_dir));
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> existing, client_->Head(ManifestKey(id)));
  if (existing.has_value()) {
    return absl::AlreadyExistsError(
        absl::StrCat("checkpoint ", id, " is already in ", Describe(), ": it is never replaced"));
  }
  Json manifest = {{"version", 1}, {"entries", Json::array()}};
  absl::Status stored;
  for (const Entry& e : entries) {
    manifest["entries"].push_back(e.dir ? Json{{"path", e.path}, {"dir", true}}
                                        : Json{{"path", e.path}, {"bytes", e.bytes}});
    if (e.dir) continue;
    stored = client_->PutFile(KeyOf(id, e.path), from_dir + "/" + e.path);
    if (!stored.ok()) break;
  }
  if (stored.ok()) stored = client_->PutString(ManifestKey(id), manifest.dump());
  if (!stored.ok()) {
    (void)DeleteObjects(id);  // nothing half-stored stays (what a failure here leaves is unlisted)
    return absl::Status(stored.code(), absl::StrCat("storing checkpoint ", id, " in ",
                                                    Describe(), ": ", stored.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<S3Checkpoints::Entry>> S3Checkpoints::Manifest(const std::string& id,
                                                                      int64_t max_entries) {
  absl::StatusOr<std::string> text = client_->GetString(ManifestKey(id), kMaxManifestBytes);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(absl::StrCat("checkpoint ", id, " is not in ", Describe()));
  }
  COHORT_RETURN_IF_ERROR(text.status());
  const Json manifest = Json::parse(*text, nullptr, false);
  const auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", id, " in ", Describe(),
                                            ": its manifest ", why));
  };
  if (!manifest.is_object() || !manifest.contains("entries") ||
      !manifest["entries"].is_array()) {
    return bad("is not a JSON object with an \"entries\" array");
  }
  if (static_cast<int64_t>(manifest["entries"].size()) > max_entries) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", id, " has more than ",
                                                      max_entries, " entries"));
  }
  std::vector<Entry> entries;
  for (const Json& e : manifest["entries"]) {
    if (!e.is_object() || !e.contains("path") || !e["path"].is_string() ||
        !SafeRelative(e["path"].get<std::string>())) {
      return bad("has an entry without a plain relative path");
    }
    Entry entry{e["path"].get<std::string>(), e.value("dir", false), 0};
    if (!entry.dir) {
      if (!e.contains("bytes") || !e["bytes"].is_number_integer() || e["bytes"].get<int64_t>() < 0) {
        return bad(absl::StrCat("gives no size for ", entry.path));
      }
      entry.bytes = e["bytes"].get<int64_t>();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::Status S3Checkpoints::Fetch(const std::string& id, const std::string& into_dir) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  COHORT_ASSIGN_OR_RETURN(std::vector<Entry> entries, Manifest(id, kMaxObjectsPerCheckpoint));
  for (const Entry& e : entries) {
    const std::string local = into_dir + "/" + e.path;
    if (e.dir) {
      std::error_code ec;
      fs::create_directories(local, ec);
      if (ec) return absl::UnavailableError(absl::StrCat("creating ", local, ": ", ec.message()));
      continue;
    }
    COHORT_RETURN_IF_ERROR(client_->GetFile(KeyOf(id, e.path), local));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>> S3Checkpoints::IdsBySuffix(
    std::initializer_list<const char*> suffixes) {
  const std::string top = prefix_.empty() ? "" : prefix_ + "/";
  COHORT_ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects,
                          client_->List(top, kMaxObjectsPerCheckpoint, "/"));
  std::map<std::string, std::vector<std::string>> ids;
  for (const char* suffix : suffixes) {
    std::vector<std::string>& with = ids[suffix];
    for (const ObjectInfo& o : objects) {  // in key order: `with` comes out sorted
      if (!absl::EndsWith(o.key, suffix)) continue;
      const std::string id =
          o.key.substr(top.size(), o.key.size() - top.size() - std::strlen(suffix));
      if (CheckId(id).ok()) with.push_back(id);
    }
  }
  return ids;
}

absl::StatusOr<std::vector<std::string>> S3Checkpoints::List() {
  COHORT_ASSIGN_OR_RETURN(auto ids, IdsBySuffix({kManifestSuffix, kDeletingSuffix}));
  const std::vector<std::string>& published = ids[kManifestSuffix];
  const std::vector<std::string>& deleting = ids[kDeletingSuffix];
  std::vector<std::string> listed;
  std::set_difference(published.begin(), published.end(), deleting.begin(), deleting.end(),
                      std::back_inserter(listed));
  return listed;
}

absl::Status S3Checkpoints::PutFile(const std::string& relative, const std::string& path) {
  if (!SafeRelative(relative)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative.substr(0, 200), "' in ", Describe(),
                     ": must be a relative path of plain names"));
  }
  return client_->PutFile(absl::StrCat(prefix_, prefix_.empty() ? "" : "/", relative), path);
}

absl::Status S3Checkpoints::DeleteFiles(const std::string& relative_dir) {
  if (!SafeRelative(relative_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", relative_dir.substr(0, 200), "' in ", Describe(),
                     ": must be a relative path of plain names"));
  }
  const std::string under = absl::StrCat(prefix_, prefix_.empty() ? "" : "/", relative_dir, "/");
  COHORT_ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects,
                          client_->List(under, kMaxObjectsPerCheckpoint));
  for (const ObjectInfo& o : objects) COHORT_RETURN_IF_ERROR(client_->Delete(o.key));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> S3Checkpoints::SweepLeftovers() {
  COHORT_ASSIGN_OR_RETURN(auto ids, IdsBySuffix({kDeletingSuffix}));
  for (const std::string& id : ids[kDeletingSuffix]) COHORT_RETURN_IF_ERROR(Delete(id));
  return ids[kDeletingSuffix];
}

absl::Status S3Checkpoints::DeleteObjects(const std::string& id) {
  COHORT_ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects,
                          client_->List(KeyOf(id), kMaxObjectsPerCheckpoint, ""));
  absl::Status first;
  for (const ObjectInfo& o : objects) {
    if (absl::Status s = client_->Delete(o.key); !s.ok() && first.ok()) first = s;
  }
  return first;
}

absl::Status S3Checkpoints::Delete(const std::string& id) {
  COHORT_RETURN_IF_ERROR(CheckId(id));
  // Marked first: a Delete cut short from here on is finished by SweepLeftovers, and List no
  // longer names the checkpoint.
  COHORT_RETURN_IF_ERROR(client_->PutString(TopKey(id, kDeletingSuffix), ""));
  COHORT_RETURN_IF_ERROR(client_->Delete(ManifestKey(id)));
  if (absl::Status s = DeleteObjects(id); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("checkpoint ", id, " in ", Describe(),
                                               " is deleted, but removing its files: ",
                                               s.message(), " (the master's next start finishes)"));
  }
  return client_->Delete(TopKey(id, kDeletingSuffix));
}

}  // namespace cohort::objstore
