#pragma once
// JSON from outside the process, parsed with its nesting bounded. nlohmann::json's parser
// recurses once per nesting level, and so does destroying a parsed value: 200,000 '[' overflow
// the stack. Every parse of text another process (or a person) wrote goes through
// ParseJsonBounded, which measures the nesting with a cheap scan before building anything.
// Thread-safe (stateless).
//
// Example:
//   absl::StatusOr<nlohmann::json> body = ParseJsonBounded(text);
//   if (!body.ok()) return body.status();  // "the JSON nests deeper than 128 levels (byte 129)"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cohort {

// The deepest nesting (arrays and objects inside one another) accepted from outside. Cohort's
// own bodies nest at most about 8 deep; metrics and hyperparameters a few more.
inline constexpr int kMaxJsonDepth = 128;

// OK when no array or object in `text` opens more than `max_depth` levels deep, counting
// brackets outside strings. Deeper: InvalidArgument "the JSON nests deeper than 128 levels
// (byte 129)". Says nothing else about whether `text` is JSON.
absl::Status CheckJsonDepth(absl::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text` as one JSON value (J: nlohmann::json or nlohmann::ordered_json). Too deep: the
// error of CheckJsonDepth, before anything is built. Not JSON (a NUL byte included):
// InvalidArgument "not JSON: " and the parser's message.
template <typename J = nlohmann::json>
absl::StatusOr<J> ParseJsonBounded(absl::string_view text, int max_depth = kMaxJsonDepth) {
  if (absl::Status depth = CheckJsonDepth(text, max_depth); !depth.ok()) return depth;
  // nlohmann stops at a NUL byte as at the end of the text, so "1\0junk" would be 1. JSON text
  // holds no raw NUL (not even in strings). Found by fuzz/json_bounded_fuzzer.
  if (const size_t nul = text.find('\0'); nul != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: a NUL byte at byte ", nul));
  }
  try {
    return J::parse(text.begin(), text.end());
  } catch (const typename J::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", e.what()));
  }
}

}  // namespace cohort
