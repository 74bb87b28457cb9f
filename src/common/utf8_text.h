#pragma once
// Text from elsewhere (a trial's output) as valid UTF-8 without NUL bytes: what JSON carries,
// what PostgreSQL's text stores, what a C string does not cut short. Each NUL, and each maximal
// part of an ill-formed sequence (Unicode's "substitution of maximal subparts": the bytes that
// began a character that never came), becomes one U+FFFD; everything else is kept byte for byte.
// Pure; thread-safe.
//
// Example:
//   const std::string stored = IsCleanUtf8(line) ? line : CleanUtf8(line);

#include <string>

#include "absl/strings/string_view.h"

namespace cohort {

// Whether `text` is valid UTF-8 (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF)
// without NUL bytes; then CleanUtf8 returns it unchanged.
bool IsCleanUtf8(absl::string_view text);
std::string CleanUtf8(absl::string_view text);

}  // namespace cohort
