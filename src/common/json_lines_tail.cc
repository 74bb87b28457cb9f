#include "common/json_lines_tail.h"

#include <fstream>

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
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) lines.push_back(std::move(parsed));
  }
  return lines;
}

}  // namespace cohort
