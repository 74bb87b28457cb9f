#include "common/json_lines_tail.h"

#include <fstream>

#include "common/json_bounded.h"

namespace cohort {

std::vector<nlohmann::json> JsonLinesTail::NewLines() {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path_);
  if (!in) return lines;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline yet: still being written
    offset_ += line.size() + 1;
    // Lines deeper than kMaxJsonDepth are skipped like malformed ones.
    absl::StatusOr<nlohmann::json> parsed = ParseJsonBounded(line);
    if (parsed.ok()) lines.push_back(*std::move(parsed));
  }
  return lines;
}

}  // namespace cohort
