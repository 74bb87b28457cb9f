#pragma once
// LinePrefixer: turns a worker's raw output stream (arbitrary chunks, as read from a pipe) into
// whole lines that each start with a prefix such as "[rank=3] ". WriteLines writes such lines to
// a file descriptor without ever splitting a line across writes, so that the output of many
// workers sharing one stdout never interleaves mid-line.
// Thread-compatible: one LinePrefixer per stream, used by one thread.
//
// Example:
//   LinePrefixer prefixer("[rank=0] ");
//   std::string lines;
//   prefixer.Consume("hello\nwor", &lines);   // lines == "[rank=0] hello\n"
//   prefixer.Consume("ld\n", &lines);         // lines += "[rank=0] world\n"
//   prefixer.Finish(&lines);                  // nothing pending: no change
//   COHORT_RETURN_IF_ERROR(WriteLines(STDOUT_FILENO, lines));

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/line_splitter.h"

namespace cohort::launch {

class LinePrefixer {
 public:
  // A line longer than `max_line_bytes` (without its newline) is cut there, marked
  // (LineSplitter::CutMarker) and emitted at once; the rest of it up to its newline is dropped:
  // a worker that never writes a newline must not make the launcher buffer without bound, nor
  // flood its reader with the pieces. 1 MiB is far beyond any log line.
  static constexpr size_t kDefaultMaxLineBytes = size_t{1} << 20;

  explicit LinePrefixer(std::string prefix, size_t max_line_bytes = kDefaultMaxLineBytes);

  // Appends to *out every line completed by `data`, prefixed and newline-terminated. Bytes
  // after the last newline are kept until a later Consume or Finish completes them.
  void Consume(absl::string_view data, std::string* out);

  // At end of stream: appends the pending partial line, if any, with a newline added.
  void Finish(std::string* out);

  // Bytes of the pending partial line (at most max_line_bytes).
  size_t pending() const { return lines_.pending(); }

 private:
  void EmitLine(absl::string_view line, std::string* out);

  std::string prefix_;
  LineSplitter lines_;
};

// Writes `lines` (whole newline-terminated lines) to `fd`, one write(2) per batch of whole lines
// of at most PIPE_BUF bytes (a longer line gets a write of its own and continues only with its
// own remainder), so that writes stay atomic with respect to other writers of the same pipe
// wherever POSIX allows. Retries interrupted and short writes. An error (for example EPIPE
// when the reader went away) is Unavailable naming `fd`.
absl::Status WriteLines(int fd, absl::string_view lines);

}  // namespace cohort::launch
