#pragma once
// Text from elsewhere (a trial's output, a user's names, a config's values) made safe to print
// on a terminal or to write as one line of a log: every control character but tab (C0, DEL,
// and the C1 controls U+0080-U+009F) becomes a visible escape (\n, \r, \x1b, \u009b), so no
// input can move the cursor, recolour or clear the screen, or forge a line of a log. Printable
// text, UTF-8 included, is left as it is. Pure; thread-safe.
//
// Example:
//   std::cout << EscapeControl(log_line) << "\n";
//   std::cout << EscapeControl(error_lines, /*keep_newlines=*/true);

#include <string>

#include "absl/strings/string_view.h"

namespace cohort {

// `text` with its control characters escaped; with `keep_newlines`, '\n' stays (text of
// several lines, each of them made safe).
std::string EscapeControl(absl::string_view text, bool keep_newlines = false);

}  // namespace cohort
