#pragma once
// JsonLinesTail: reads the JSON lines appended to a file since the last call (a trial's
// metrics.jsonl, which its chief appends while the CLI or the agent follows it). A last line
// still being written (no newline yet) waits for the next call; lines that are not JSON are
// skipped. The file is the trial's, so untrusted: a line longer than `max_line_bytes` is skipped
// (and counted) without ever being held whole, and one call returns at most `max_lines` lines
// (the rest wait for the next), so what a reader holds is bounded whatever the file holds.
// Thread-compatible.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace cohort {

class JsonLinesTail {
 public:
  // Far beyond any record Cohort writes (a report of 1,024 metrics is about 300 KB).
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 20;

  explicit JsonLinesTail(std::string path, size_t max_line_bytes = kDefaultMaxLineBytes)
      : path_(std::move(path)), max_line_bytes_(max_line_bytes) {}
  // The complete lines added since the last call (all of them the first time), at most
  // `max_lines` of them.
  std::vector<nlohmann::json> NewLines(size_t max_lines = SIZE_MAX);
  // Lines skipped so far for being longer than max_line_bytes.
  uint64_t long_lines() const { return long_lines_; }

 private:
  std::string path_;
  size_t max_line_bytes_;
  size_t offset_ = 0;      // where the next unread line (or the rest of a long one) starts
  bool skipping_ = false;  // offset_ is inside a line longer than max_line_bytes_
  uint64_t long_lines_ = 0;
};

}  // namespace cohort
