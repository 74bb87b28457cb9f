#include "common/context_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "common/beneath.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

using ArchivePtr = std::unique_ptr<archive, int (*)(archive*)>;
using EntryPtr = std::unique_ptr<archive_entry, void (*)(archive_entry*)>;

constexpr size_t kCopyChunk = 64 << 10;

std::string ArchiveError(archive* a) {
  const char* message = archive_error_string(a);
  return message == nullptr ? "unknown libarchive error" : message;
}

// libarchive's write callback: hands each block to the ArchiveWriter; -1 (an error libarchive
// reports) when it refuses the bytes.
la_ssize_t WriteToCallback(archive* a, void* client, const void* buffer, size_t length) {
  const ArchiveWriter& write = *static_cast<const ArchiveWriter*>(client);
  if (!write(static_cast<const char*>(buffer), length)) {
    archive_set_error(a, EPIPE, "the receiver stopped taking the archive");
    return -1;
  }
  return static_cast<la_ssize_t>(length);
}

// The entry `rel` (plain components; "": the directory itself) beneath the open directory
// `root_fd`: its parent opened without following any link (common/beneath.h), so nothing
// outside the directory is read even if a path in it is swapped for a link meanwhile.
struct OpenedEntry {
  UniqueFd parent;
  std::string leaf;  // "." for the directory itself
  struct stat st;
};

absl::StatusOr<OpenedEntry> OpenEntry(int root_fd, const std::string& rel,
                                      const std::string& name) {
  OpenedEntry e;
  const fs::path path(rel);
  absl::StatusOr<UniqueFd> parent =
      OpenDirectoryBeneath(root_fd, rel.empty() ? "" : path.parent_path().string());
  if (!parent.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("context entry '", name, "': cannot read it: ", parent.status().message()));
  }
  e.parent = *std::move(parent);
  e.leaf = rel.empty() ? "." : path.filename().string();
  if (::fstatat(e.parent.get(), e.leaf.c_str(), &e.st, AT_SYMLINK_NOFOLLOW) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("context entry '", name, "': cannot read it: ", std::strerror(errno)));
  }
  return e;
}

// Copies the regular file `e` (opened without following a link: the file stat'ed, nothing
// else) into the archive; a file that grows while packed is cut at its stat size.
absl::Status AddFileData(archive* a, const OpenedEntry& e, const std::string& name) {
  UniqueFd fd(::openat(e.parent.get(), e.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat now;
  if (fd.get() < 0 || ::fstat(fd.get(), &now) != 0 || now.st_ino != e.st.st_ino ||
      now.st_dev != e.st.st_dev) {
    return absl::InvalidArgumentError(
        absl::StrCat("context entry '", name, "': it changed while being packed"));
  }
  std::string chunk(kCopyChunk, '\0');
  int64_t left = e.st.st_size;
  while (left > 0) {
    const ssize_t got =
        ::read(fd.get(), chunk.data(), static_cast<size_t>(std::min<int64_t>(left, kCopyChunk)));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (archive_write_data(a, chunk.data(), static_cast<size_t>(got)) < 0) {
      return absl::InternalError(
          absl::StrCat("context entry '", name, "': packing it failed: ", ArchiveError(a)));
    }
    left -= got;
  }
  if (left > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context entry '", name, "': reading it failed (or it shrank while being packed)"));
  }
  return absl::OkStatus();
}

// Writes the header of `name` (the entry `rel` beneath `root_fd`) and, for a regular file, its
// contents.
absl::Status AddEntry(archive* a, int root_fd, const std::string& rel, const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(const OpenedEntry e, OpenEntry(root_fd, rel, name));
  EntryPtr entry(archive_entry_new(), archive_entry_free);
  archive_entry_copy_stat(entry.get(), &e.st);
  archive_entry_set_pathname(entry.get(), name.c_str());
  if (S_ISLNK(e.st.st_mode)) {
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlinkat(e.parent.get(), e.leaf.c_str(), target.data(), target.size());
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "context entry '", name, "': cannot read the link: ", std::strerror(errno)));
    }
    target.resize(static_cast<size_t>(n));
    archive_entry_set_symlink(entry.get(), target.c_str());
    archive_entry_set_size(entry.get(), 0);
  } else if (S_ISDIR(e.st.st_mode)) {
    archive_entry_set_size(entry.get(), 0);
  } else if (!S_ISREG(e.st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context entry '", name,
        "': only regular files, directories and symbolic links can be packed; leave it out "
        "with a .detignore line"));
  }
  if (archive_write_header(a, entry.get()) < ARCHIVE_WARN) {
    return absl::InternalError(
        absl::StrCat("context entry '", name, "': packing it failed: ", ArchiveError(a)));
  }
  if (!S_ISREG(e.st.st_mode)) return absl::OkStatus();
  return AddFileData(a, e, name);
}

// The rules every entry read from a context archive passes, and the archive's limits.
class EntryRules {
 public:
  explicit EntryRules(const ContextArchiveLimits& limits) : limits_(limits) {}

  // The entry's path relative to the archive's root, normalized ("" for the root itself), or
  // InvalidArgument naming the entry and the rule it breaks.
  absl::StatusOr<std::string> Check(archive_entry* entry) {
    if (++entries_ > limits_.max_entries) {
      return absl::InvalidArgumentError(
          absl::StrCat("context: more than ", limits_.max_entries,
                       " entries (the limit); leave files out with a .detignore file"));
    }
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw == nullptr ? "" : raw;
    const auto refuse = [&name](absl::string_view rule) {
      return absl::InvalidArgumentError(absl::StrCat("context entry '", name, "': ", rule));
    };
    if (name.empty()) return refuse("an empty path is not allowed");
    if (name[0] == '/') return refuse("absolute paths are not allowed");
    std::vector<std::string> parts;
    for (absl::string_view part : absl::StrSplit(name, '/')) {
      if (part.empty() || part == ".") continue;
      if (part == "..") return refuse("'..' is not allowed");
      parts.emplace_back(part);
    }
    if (archive_entry_hardlink(entry) != nullptr) return refuse("hard links are not allowed");
    const mode_t type = archive_entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
      return refuse(
          "only regular files, directories and symbolic links are allowed (not devices, "
          "fifos or sockets)");
    }
    if (parts.empty() && type != AE_IFDIR) return refuse("the archive's root must be a directory");
    std::string path;
    for (const std::string& part : parts) {
      path = path.empty() ? part : absl::StrCat(path, "/", part);
      if (links_.count(path)) {
        return refuse(absl::StrCat("writing through the symbolic link '", path,
                                   "' earlier in the archive is not allowed"));
      }
    }
    if (type == AE_IFLNK) links_.insert(path);
    if (type == AE_IFREG) {
      const int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
      if (size < 0 || size > limits_.max_unpacked_bytes - declared_bytes_) {
        return refuse(absl::StrCat("its ", size, " bytes take the context past ",
                                   limits_.max_unpacked_bytes,
                                   " unpacked bytes (the limit; a decompression bomb?)"));
      }
      declared_bytes_ += size;
    }
    return path;
  }

  // Counts `n` bytes of file data actually read: InvalidArgument past the unpacked limit.
  absl::Status CountData(size_t n) {
    data_bytes_ += static_cast<int64_t>(n);
    if (data_bytes_ > limits_.max_unpacked_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("context: unpacks to more than ",
                                                     limits_.max_unpacked_bytes,
                                                     " bytes (the limit; a decompression bomb?)"));
    }
    return absl::OkStatus();
  }

  int64_t entries() const { return entries_; }

 private:
  ContextArchiveLimits limits_;
  int64_t entries_ = 0;
  int64_t declared_bytes_ = 0;
  int64_t data_bytes_ = 0;
  std::set<std::string> links_;
};

// A reader of the archive in `bytes`, or (with `from_file`) in the file named by `bytes`.
absl::StatusOr<ArchivePtr> OpenReader(absl::string_view bytes, bool from_file = false) {
  ArchivePtr a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  const int r = from_file
                    ? archive_read_open_filename(a.get(), std::string(bytes).c_str(), kCopyChunk)
                    : archive_read_open_memory(a.get(), bytes.data(), bytes.size());
  if (r != ARCHIVE_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("context: not a valid tar.gz archive (", ArchiveError(a.get()), ")"));
  }
  return a;
}

// The next entry's header; nullptr at the end of the archive. InvalidArgument when the archive
// is not a gzip'd tar or is corrupt.
absl::StatusOr<archive_entry*> NextHeader(archive* a) {
  archive_entry* entry = nullptr;
  const int r = archive_read_next_header(a, &entry);
  if (r == ARCHIVE_EOF) return nullptr;
  if (r < ARCHIVE_WARN) {
    return absl::InvalidArgumentError(
        absl::StrCat("context: not a valid tar.gz archive (", ArchiveError(a), ")"));
  }
  if (archive_filter_code(a, 0) != ARCHIVE_FILTER_GZIP) {
    return absl::InvalidArgumentError(
        "context: the tar archive is not gzip-compressed; upload it as tar.gz");
  }
  return entry;
}

// Reads the current entry's data block by block, counting it, and hands each block to `sink`.
template <typename Sink>
absl::Status CopyData(archive* a, const std::string& name, EntryRules& rules, Sink sink) {
  for (;;) {
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    const int r = archive_read_data_block(a, &block, &size, &offset);
    if (r == ARCHIVE_EOF) return absl::OkStatus();
    if (r < ARCHIVE_WARN) {
      return absl::InvalidArgumentError(
          absl::StrCat("context entry '", name, "': its data is corrupt: ", ArchiveError(a)));
    }
    if (absl::Status counted = rules.CountData(size); !counted.ok()) return counted;
    if (absl::Status sunk = sink(block, size, offset); !sunk.ok()) return sunk;
  }
}

absl::Status NoEntries() {
  return absl::InvalidArgumentError(
      "context: the tar.gz archive lists no entries (a packed context holds at least \"./\")");
}

}  // namespace

absl::StatusOr<std::string> PackContext(const std::string& dir,
                                        const std::vector<std::string>& entries) {
  std::string out;
  COHORT_RETURN_IF_ERROR(StreamPackedDirectory(dir, entries, [&out](const char* data, size_t n) {
    out.append(data, n);
    return true;
  }));
  return out;
}

absl::Status StreamPackedDirectory(const std::string& dir, const std::vector<std::string>& entries,
                                   const ArchiveWriter& write) {
  ArchivePtr a(archive_write_new(), archive_write_free);
  // Blocks of kCopyChunk: a receiver sees the archive as it is made, not all at the end.
  archive_write_set_bytes_per_block(a.get(), static_cast<int>(kCopyChunk));
  if (archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_open(a.get(), const_cast<ArchiveWriter*>(&write), nullptr, WriteToCallback,
                         nullptr) != ARCHIVE_OK) {
    return absl::InternalError(
        absl::StrCat("packing ", dir, ": cannot start the archive: ", ArchiveError(a.get())));
  }
  absl::StatusOr<UniqueFd> root = OpenDirectory(dir);
  if (!root.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("packing ", dir, ": ", root.status().message()));
  }
  if (absl::Status added = AddEntry(a.get(), root->get(), "", "./"); !added.ok()) return added;
  for (const std::string& e : entries) {
    if (!IsPlainRelativePath(e) || e.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("context entry '", e, "': not a plain path inside ", dir));
    }
    if (absl::Status added = AddEntry(a.get(), root->get(), e, "./" + e); !added.ok()) {
      return added;
    }
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return absl::InternalError(
        absl::StrCat("packing ", dir, ": finishing the archive: ", ArchiveError(a.get())));
  }
  return absl::OkStatus();
}

absl::Status CheckContext(absl::string_view bytes, const ContextArchiveLimits& limits,
                          std::vector<std::string>* paths) {
  absl::StatusOr<ArchivePtr> a = OpenReader(bytes);
  if (!a.ok()) return a.status();
  EntryRules rules(limits);
  for (;;) {
    absl::StatusOr<archive_entry*> entry = NextHeader(a->get());
    if (!entry.ok()) return entry.status();
    if (*entry == nullptr) break;
    absl::StatusOr<std::string> path = rules.Check(*entry);
    if (!path.ok()) return path.status();
    absl::Status read = CopyData(a->get(), *path, rules,
                                 [](const void*, size_t, la_int64_t) { return absl::OkStatus(); });
    if (!read.ok()) return read;
    if (paths != nullptr && !path->empty()) paths->push_back(*path);
  }
  return rules.entries() == 0 ? NoEntries() : absl::OkStatus();
}

namespace {

// Errors that mean the data did not reach the disk whole: the file system is full, over a
// quota, read-only, or failing.
bool IsStorageError(int error) {
  return error == ENOSPC || error == EDQUOT || error == EIO || error == EFBIG || error == EROFS;
}

// OK for a result of libarchive's disk writer that lost nothing; otherwise why `name` (about
// `needed` bytes) could not be written under `dest`. A warning is an error when its errno says
// the data did not reach the disk (libarchive reports a short write as ARCHIVE_WARN); other
// warnings (a time or mode it could not restore) are harmless. A full disk says so, with the
// space needed and free.
absl::Status WriteResult(archive* writer, int result, const std::string& name,
                         absl::string_view what, const fs::path& dest, int64_t needed) {
  if (result == ARCHIVE_OK) return absl::OkStatus();
  const int error = archive_errno(writer);
  if (result == ARCHIVE_WARN && !IsStorageError(error)) return absl::OkStatus();
  const std::string entry = name.empty() ? std::string("context") : "context entry '" + name + "'";
  if (error == ENOSPC || error == EDQUOT) {
    struct statvfs fs_stat {};
    const int64_t free_bytes =
        ::statvfs(dest.c_str(), &fs_stat) == 0
            ? static_cast<int64_t>(fs_stat.f_bavail) * static_cast<int64_t>(fs_stat.f_frsize)
            : -1;
    return absl::ResourceExhaustedError(absl::StrCat(
        entry, ": ", error == EDQUOT ? "disk quota exceeded" : "no space left on device",
        " at ", dest.string(), " (needed ", needed, " bytes for it, free ",
        free_bytes < 0 ? std::string("unknown") : absl::StrCat(free_bytes), "): free space "
        "there, or give the agent a --work-dir on a larger disk"));
  }
  return absl::InternalError(absl::StrCat(entry, ": ", what, ": ", ArchiveError(writer)));
}

// ExtractContext's body, from the archive in memory (`source` is the bytes) or in a file
// (`source` is its name).
absl::Status Extract(absl::string_view source, bool from_file, const std::string& dest_dir,
                     const ContextArchiveLimits& limits) {
  // Entries are written at absolute paths under the canonical destination (no link in it), so
  // extraction never changes the working directory; libarchive's NOABSOLUTEPATHS cannot be set
  // for that reason, and EntryRules refuses absolute entry paths before they are prefixed.
  std::error_code ec;
  const fs::path dest = fs::canonical(dest_dir, ec);
  if (ec || !fs::is_directory(dest)) {
    return absl::FailedPreconditionError(
        absl::StrCat("unpacking the context: ", dest_dir, " is not a directory"));
  }
  absl::StatusOr<ArchivePtr> reader = OpenReader(source, from_file);
  if (!reader.ok()) return reader.status();
  ArchivePtr writer(archive_write_disk_new(), archive_write_free);
  archive_write_disk_set_options(writer.get(), ARCHIVE_EXTRACT_TIME |
                                                   ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                   ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  EntryRules rules(limits);
  for (;;) {
    absl::StatusOr<archive_entry*> entry = NextHeader(reader->get());
    if (!entry.ok()) return entry.status();
    if (*entry == nullptr) break;
    absl::StatusOr<std::string> path = rules.Check(*entry);
    if (!path.ok()) return path.status();
    if (path->empty()) continue;  // the root: dest_dir itself, left as it is
    const std::string name = *path;
    const int64_t size = archive_entry_size_is_set(*entry) ? archive_entry_size(*entry) : 0;
    // libarchive's disk writer reports a short write (a full disk) as a mere warning and pads
    // the file to its size: every result but OK is checked (WriteResult), so nothing is left
    // looking whole while it holds zeros.
    const auto check = [&](int result, absl::string_view what) {
      return WriteResult(writer.get(), result, name, what, dest, size);
    };
    archive_entry_set_pathname(*entry, (dest / name).c_str());
    COHORT_RETURN_IF_ERROR(check(archive_write_header(writer.get(), *entry), "writing it"));
    absl::Status copied = CopyData(
        reader->get(), name, rules, [&](const void* block, size_t n, la_int64_t offset) {
          const la_ssize_t written = archive_write_data_block(writer.get(), block, n, offset);
          return check(written < 0 ? static_cast<int>(written) : ARCHIVE_OK, "writing its data");
        });
    if (!copied.ok()) return copied;
    COHORT_RETURN_IF_ERROR(check(archive_write_finish_entry(writer.get()), "finishing it"));
  }
  if (absl::Status closed = WriteResult(writer.get(), archive_write_close(writer.get()), "",
                                        "finishing the context", dest, 0);
      !closed.ok()) {
    return closed;
  }
  return rules.entries() == 0 ? NoEntries() : absl::OkStatus();
}

}  // namespace

absl::Status ExtractContext(absl::string_view bytes, const std::string& dest_dir,
                            const ContextArchiveLimits& limits) {
  return Extract(bytes, /*from_file=*/false, dest_dir, limits);
}

absl::Status ExtractContextFile(const std::string& archive_path, const std::string& dest_dir,
                                const ContextArchiveLimits& limits) {
  return Extract(archive_path, /*from_file=*/true, dest_dir, limits);
}

}  // namespace cohort
