#include "common/line_splitter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort {

LineSplitter::LineSplitter(size_t max_line_bytes)
    : max_line_bytes_(std::max<size_t>(1, max_line_bytes)), marker_(CutMarker(max_line_bytes_)) {
  pending_.reserve(std::min<size_t>(max_line_bytes_, 4096));
}

std::string LineSplitter::CutMarker(size_t max_line_bytes) {
  return absl::StrCat(" [cut: line longer than ", max_line_bytes, " bytes]");
}

void LineSplitter::Consume(absl::string_view data, LineFn line) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    const absl::string_view head = data.substr(0, newline);  // all of data without a newline
    if (dropping_) {
      dropped_bytes_ += head.size();
    } else if (pending_.empty() && newline != absl::string_view::npos &&
               head.size() <= max_line_bytes_) {
      line(head);  // the common case: a whole short line, passed on without a copy
    } else {
      const size_t take = std::min(head.size(), max_line_bytes_ - pending_.size());
      pending_.append(head.data(), take);
      if (take < head.size()) {  // longer than the limit: cut now, drop the rest
        pending_.append(marker_);
        line(pending_);
        pending_.clear();
        ++cut_lines_;
        dropping_ = true;
        dropped_bytes_ += head.size() - take;
      } else if (newline != absl::string_view::npos) {
        line(pending_);
        pending_.clear();
      }
    }
    if (newline == absl::string_view::npos) return;
    dropping_ = false;
    data.remove_prefix(newline + 1);
  }
}

void LineSplitter::Finish(LineFn line) {
  if (!pending_.empty()) line(pending_);
  pending_.clear();
  dropping_ = false;
}

}  // namespace cohort
