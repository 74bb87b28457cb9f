#include "common/utf8_text.h"

namespace cohort {
namespace {

constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// How the character at text[i] reads: `length` bytes, `valid` or not. An invalid one's length
// is its maximal subpart (the lead byte and the continuation bytes that still fitted), at least
// one byte. A NUL is invalid here.
struct Sequence {
  size_t length;
  bool valid;
};

Sequence SequenceAt(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b == 0) return {1, false};
  if (b < 0x80) return {1, true};
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte; later ones: 80..BF
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= text.size()) return {k, false};
    const unsigned char c = byte(i + k);
    if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return {k, false};
  }
  return {n, true};
}

// The length of the clean prefix of `text`.
size_t CleanPrefix(absl::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const Sequence s = SequenceAt(text, i);
    if (!s.valid) break;
    i += s.length;
  }
  return i;
}

}  // namespace

bool IsCleanUtf8(absl::string_view text) { return CleanPrefix(text) == text.size(); }

std::string CleanUtf8(absl::string_view text) {
  size_t i = CleanPrefix(text);
  std::string clean(text.substr(0, i));
  clean.reserve(text.size() + 8);
  while (i < text.size()) {
    const Sequence s = SequenceAt(text, i);
    if (s.valid) {
      clean.append(text.data() + i, s.length);
    } else {
      clean.append(kReplacement.data(), kReplacement.size());
    }
    i += s.length;
  }
  return clean;
}

}  // namespace cohort
