#include "common/json_lines_tail.h"

#include <cstring>
#include <fstream>

#include "common/json_bounded.h"

namespace cohort {

std::vector<nlohmann::json> JsonLinesTail::NewLines(size_t max_lines) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return lines;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string line;  // the line starting at offset_ (when not skipping), at most max_line_bytes_
  size_t read = offset_;  // file position after the bytes read so far
  char buffer[65536];
  while (lines.size() < max_lines) {
    in.read(buffer, sizeof(buffer));
    const size_t n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    for (size_t at = 0; at < n && lines.size() < max_lines;) {
      const char* newline = static_cast<const char*>(std::memchr(buffer + at, '\n', n - at));
      const size_t end = newline != nullptr ? static_cast<size_t>(newline - buffer) : n;
      if (!skipping_) line.append(buffer + at, end - at);
      if (!skipping_ && line.size() > max_line_bytes_) {
        skipping_ = true;
        ++long_lines_;
        line.clear();
      }
      if (skipping_) offset_ = read + end;  // dropped bytes are never read again
      if (newline == nullptr) break;
      if (!skipping_) {
        // Lines deeper than kMaxJsonDepth are skipped like malformed ones.
        absl::StatusOr<nlohmann::json> parsed = ParseJsonBounded(line);
        if (parsed.ok()) lines.push_back(*std::move(parsed));
      }
      skipping_ = false;
      line.clear();
      at = end + 1;
      offset_ = read + at;
    }
    read += n;
  }
  return lines;
}

}  // namespace cohort
