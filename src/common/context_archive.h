// Context archives: a trial's context directory as tar.gz bytes, packed by the CLI, checked by
// the master at upload and unpacked by the agent, all with libarchive (no `tar` subprocess).
//
// Every entry read from an archive passes the same rules (CheckContextEntry), before anything
// is written: a relative path with no `..` component, a regular file, directory or symbolic
// link (no device, fifo or socket, no hard link), and no path at or under a symbolic link
// earlier in the archive (nothing is written through a link). An archive also stays within
// ContextArchiveLimits: its entry count and the total bytes of its files, checked at each entry
// header, so a decompression bomb is refused at its first oversized entry, before its data is
// inflated. Symbolic links are kept as links; their targets are not followed or checked.
//
// Thread-safety: the functions share no state and may run concurrently (extraction never
// changes the working directory).
#ifndef COHORT_COMMON_CONTEXT_ARCHIVE_H_
#define COHORT_COMMON_CONTEXT_ARCHIVE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {

// The most entries (files, directories and links together) a context archive may hold.
inline constexpr int64_t kMaxContextEntries = 100'000;
// The most bytes a context archive may unpack to: the sum of its files' sizes.
inline constexpr int64_t kMaxContextUnpackedBytes = int64_t{4} << 30;

struct ContextArchiveLimits {
  int64_t max_entries = kMaxContextEntries;
  int64_t max_unpacked_bytes = kMaxContextUnpackedBytes;
};

// The tar.gz bytes of `entries` (paths relative to `dir`, as ContextEntries lists them), each
// stored as "./PATH" after a "./" entry for `dir` itself, so an archive is never empty.
// Regular files are stored with their contents, directories alone (their children are entries
// of their own) and symbolic links as links. Errors: an entry that cannot be read, or is not a
// file, directory or link, is InvalidArgument naming it.
absl::StatusOr<std::string> PackContext(const std::string& dir,
                                        const std::vector<std::string>& entries);

// Receives an archive block by block; returns false to stop the packing (the receiver went
// away).
using ArchiveWriter = std::function<bool(const char* data, size_t size)>;

// PackContext's archive handed to `write` block by block (64 KiB blocks) as it is made, so a
// large directory (a checkpoint) is streamed in bounded memory. Errors as PackContext's; when
// `write` returns false, Internal saying the receiver stopped taking the archive.
absl::Status StreamPackedDirectory(const std::string& dir, const std::vector<std::string>& entries,
                                   const ArchiveWriter& write);

// Reads `bytes` without writing anything: OK when they are a gzip'd tar archive holding at
// least one entry, every entry passes the rules above, and the archive stays within `limits`.
// Otherwise InvalidArgument naming the entry and the rule ("context entry '../evil': '..' is
// not allowed") or what is wrong with the archive. When `paths` is given, it receives every
// entry's path as it would be unpacked ("./bin/trial" is "bin/trial"; the root is left out).
absl::Status CheckContext(absl::string_view bytes, const ContextArchiveLimits& limits = {},
                          std::vector<std::string>* paths = nullptr);

// Unpacks `bytes` into `dest_dir` (which must exist), checking each entry by the rules and
// limits above before it is written; file permissions are kept (less set-id bits and umask),
// owners are not. On error, InvalidArgument as CheckContext's (or Internal for a failed write)
// and the entries before the refused one stay in `dest_dir`; nothing is written outside it.
absl::Status ExtractContext(absl::string_view bytes, const std::string& dest_dir,
                            const ContextArchiveLimits& limits = {});
// ExtractContext of the archive in the file `archive_path`, read as it is unpacked (a large
// archive never is in memory whole).
absl::Status ExtractContextFile(const std::string& archive_path, const std::string& dest_dir,
                                const ContextArchiveLimits& limits = {});

}  // namespace cohort

#endif  // COHORT_COMMON_CONTEXT_ARCHIVE_H_
