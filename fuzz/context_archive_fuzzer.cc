// Fuzz target: context archives (common/context_archive.h) as the master checks an upload
// (CheckContext) and the agent unpacks it (ExtractContext), here into a fresh temporary
// directory that the target removes after each input.
//
// Input: bytes starting with gzip's magic (1f 8b) are the archive as uploaded. Any other bytes
// are first checked as they are (refused: not gzip-compressed), then gzip-compressed by the
// target and used as the archive, so the fuzzer mutates tar headers directly rather than
// compressed bits.
// Invariants: a refusal says what is wrong; CheckContext and ExtractContext agree (extraction
// may also fail to write, Internal, where the check passed); extraction writes nothing beside
// its destination, and only files, directories and links without set-id bits inside it.
// Limits are small (64 entries, 1 MiB) so the fuzzer reaches them.

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/context_archive.h"
#include "fuzz/fuzz_check.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

constexpr ContextArchiveLimits kLimits{.max_entries = 64, .max_unpacked_bytes = 1 << 20};

bool IsGzip(absl::string_view bytes) {
  return bytes.size() >= 2 && bytes.substr(0, 2) == "\x1f\x8b";
}

std::string Gzip(absl::string_view bytes) {
  z_stream z{};
  FUZZ_CHECK(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "zlib");
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "zlib");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A fresh directory holding only "dest" (where the archive is unpacked).
fs::path MakeSandbox() {
  std::string pattern = (fs::temp_directory_path() / "cohort-fuzz-XXXXXX").string();
  FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
  fs::create_directory(fs::path(pattern) / "dest");
  return pattern;
}

// What extraction left: "dest" alone in the sandbox, and inside it only files, directories and
// links, without set-id bits. Makes every directory writable so the sandbox can be removed.
void CheckAndOpen(const fs::path& sandbox) {
  for (const fs::directory_entry& entry : fs::directory_iterator(sandbox)) {
    FUZZ_CHECK(entry.path().filename() == "dest",
               "extraction wrote beside its destination: " + entry.path().string());
  }
  fs::permissions(sandbox / "dest", fs::perms::owner_all, fs::perm_options::add);
  for (auto it = fs::recursive_directory_iterator(sandbox / "dest");
       it != fs::recursive_directory_iterator(); ++it) {
    struct stat st;
    FUZZ_CHECK(::lstat(it->path().c_str(), &st) == 0, it->path().string());
    FUZZ_CHECK(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode),
               "extraction made a special file: " + it->path().string());
    FUZZ_CHECK((st.st_mode & (S_ISUID | S_ISGID)) == 0 || S_ISLNK(st.st_mode),
               "extraction kept a set-id bit: " + it->path().string());
    if (S_ISDIR(st.st_mode)) ::chmod(it->path().c_str(), 0700);
  }
}

void CheckArchive(absl::string_view archive) {
  const absl::Status checked = CheckContext(archive, kLimits);
  if (!checked.ok()) FUZZ_CHECK_REFUSAL(checked);
  const fs::path sandbox = MakeSandbox();
  const absl::Status extracted = ExtractContext(archive, (sandbox / "dest").string(), kLimits);
  if (!extracted.ok()) FUZZ_CHECK_REFUSAL(extracted);
  FUZZ_CHECK(checked.ok() == extracted.ok() || (checked.ok() && absl::IsInternal(extracted)),
             "CheckContext: " + checked.ToString() + "\nExtractContext: " + extracted.ToString());
  CheckAndOpen(sandbox);
  std::error_code ec;
  fs::remove_all(sandbox, ec);
  FUZZ_CHECK(!ec, "cannot remove " + sandbox.string() + ": " + ec.message());
}

}  // namespace
}  // namespace cohort

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (cohort::IsGzip(bytes)) {
    cohort::CheckArchive(bytes);
    return 0;
  }
  const absl::Status raw = cohort::CheckContext(bytes, cohort::kLimits);
  FUZZ_CHECK_REFUSAL(raw);
  cohort::CheckArchive(cohort::Gzip(bytes));
  return 0;
}
