#pragma once
// LineSplitter: cuts an untrusted byte stream (arbitrary chunks, as read from a pipe) into lines
// while holding at most a bounded part of one line. A line that reaches the limit is passed on
// at once, cut, with a marker saying so; the rest of it, up to its newline, is dropped and
// counted, never buffered: a worker that prints 150 MB without a newline costs its reader
// `max_line_bytes`, not 150 MB. Bytes are passed on as they came (invalid UTF-8 and NUL
// included): what a line may hold is its consumer's business (wire::CleanLogLine).
// Thread-compatible: one LineSplitter per stream, used by one thread.
//
// Example:
//   LineSplitter lines(4);
//   lines.Consume("ab\ncdefgh", [](absl::string_view l) { ... });
//   // called with "ab", then "cdef [cut: line longer than 4 bytes]"; "gh" is dropped
//   lines.Consume("ij\nk", ...);   // drops "ij" (the cut line's end); "k" is pending
//   lines.Finish(...);             // called with "k"

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace cohort {

class LineSplitter {
 public:
  using LineFn = absl::FunctionRef<void(absl::string_view line)>;

  // `max_line_bytes` (at least 1) bounds a line passed on, its marker aside.
  explicit LineSplitter(size_t max_line_bytes);

  // The marker appended to a line cut at `max_line_bytes`.
  static std::string CutMarker(size_t max_line_bytes);

  // Calls `line` with every line `data` completes (without its newline), in order, and with
  // every line cut at the limit (with CutMarker). Bytes after the last newline are kept (at most
  // max_line_bytes) until a later Consume or Finish completes them.
  void Consume(absl::string_view data, LineFn line);
  // At the end of the stream: passes on the pending partial line, if any.
  void Finish(LineFn line);

  size_t pending() const { return pending_.size(); }
  // Bytes dropped so far from the ends of cut lines.
  uint64_t dropped_bytes() const { return dropped_bytes_; }
  // Lines cut so far.
  uint64_t cut_lines() const { return cut_lines_; }

 private:
  const size_t max_line_bytes_;
  const std::string marker_;
  std::string pending_;
  bool dropping_ = false;  // inside a cut line: its bytes up to the newline are dropped
  uint64_t dropped_bytes_ = 0;
  uint64_t cut_lines_ = 0;
};

}  // namespace cohort
