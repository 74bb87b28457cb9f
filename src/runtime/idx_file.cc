#include "runtime/idx_file.h"

#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::runtime {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

// Reads exactly `n` bytes; false on a short read.
bool ReadFully(gzFile f, void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    int got = gzread(f, p, chunk);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  // gzopen reads uncompressed files transparently too.
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (f == nullptr) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  uint8_t magic[4];
  if (!ReadFully(f.get(), magic, 4)) {
    return absl::DataLossError(absl::StrCat(path, ": shorter than an IDX header"));
  }
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": not an IDX file of unsigned bytes (magic ", magic[0], " ", magic[1], " ",
        magic[2], " ", magic[3], ", expected 0 0 8 <dims>)"));
  }
  IdxArray array;
  size_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    if (!ReadFully(f.get(), be, 4)) {
      return absl::DataLossError(absl::StrCat(path, ": header ends inside dimension ", d));
    }
    const uint32_t size = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) |
                          (uint32_t{be[2]} << 8) | uint32_t{be[3]};
    array.dims.push_back(size);
    total *= size;
  }
  array.data.resize(total);
  if (!ReadFully(f.get(), array.data.data(), total)) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: expected ", total,
                                            " data bytes for dimensions [",
                                            absl::StrJoin(array.dims, ","), "]"));
  }
  return array;
}

}  // namespace cohort::runtime
