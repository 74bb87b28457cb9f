#pragma once
// JsonLinesTail: reads the JSON lines appended to a file since the last call (a trial's
// metrics.jsonl, which its chief appends while the CLI or the agent follows it). A last line
// still being written (no newline yet) waits for the next call; lines that are not JSON are
// skipped. Thread-compatible.

#include <cstddef>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace cohort {

class JsonLinesTail {
 public:
  explicit JsonLinesTail(std::string path) : path_(std::move(path)) {}
  // The complete lines added since the last call (all of them the first time).
  std::vector<nlohmann::json> NewLines();

 private:
  std::string path_;
  size_t offset_ = 0;
};

}  // namespace cohort
