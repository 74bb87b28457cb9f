#pragma once
// Comparing secrets without leaking where they differ. Thread-safe.

#include <string>

namespace cohort {

// Whether `a` equals `b`, in time that depends on their lengths only (never on where they
// first differ), for comparing a presented credential with the real one.
inline bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    differ = differ | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  }
  return differ == 0;
}

}  // namespace cohort
