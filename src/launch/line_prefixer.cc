#include "launch/line_prefixer.h"

#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace cohort::launch {
namespace {

absl::Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat("writing worker output to fd ", fd, ": ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

LinePrefixer::LinePrefixer(std::string prefix, size_t max_line_bytes)
    : prefix_(std::move(prefix)), lines_(max_line_bytes) {}

void LinePrefixer::EmitLine(absl::string_view line, std::string* out) {
  out->append(prefix_);
  out->append(line.data(), line.size());
  out->push_back('\n');
}

void LinePrefixer::Consume(absl::string_view data, std::string* out) {
  lines_.Consume(data, [&](absl::string_view line) { EmitLine(line, out); });
}

void LinePrefixer::Finish(std::string* out) {
  lines_.Finish([&](absl::string_view line) { EmitLine(line, out); });
}

absl::Status WriteLines(int fd, absl::string_view lines) {
  while (!lines.empty()) {
    // Take as many whole lines as fit in PIPE_BUF; at least one line.
    size_t end = 0;
    while (end < lines.size()) {
      size_t newline = lines.find('\n', end);
      size_t next = newline == absl::string_view::npos ? lines.size() : newline + 1;
      if (end > 0 && next > PIPE_BUF) break;
      end = next;
      if (end >= PIPE_BUF) break;
    }
    absl::Status status = WriteAll(fd, lines.data(), end);
    if (!status.ok()) return status;
    lines.remove_prefix(end);
  }
  return absl::OkStatus();
}

}  // namespace cohort::launch
