#pragma once
// What the fuzz targets (fuzz/*_fuzzer.cc) assert. A broken invariant prints what broke and
// aborts, which libFuzzer (scripts/fuzz.sh) and the replay driver (replay_main.cc) both report
// as a crash with the input that caused it. Used for our own invariants only: an input the code
// under test refuses is a Status, checked with FUZZ_CHECK_REFUSAL.
//
// Example:
//   absl::StatusOr<T> again = Parse(first->ToJson());
//   FUZZ_CHECK(again.ok(), again.status().ToString());

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"

namespace cohort::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* condition,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n  %s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

// A refusal must say what is wrong: a non-OK status with a message.
inline bool IsClearRefusal(const absl::Status& status) {
  return !status.ok() && !status.message().empty();
}

}  // namespace cohort::fuzz

#define FUZZ_CHECK(condition, detail)                                                 \
  do {                                                                                \
    if (!(condition)) ::cohort::fuzz::Fail(__FILE__, __LINE__, #condition, (detail)); \
  } while (false)

#define FUZZ_CHECK_REFUSAL(status)                   \
  FUZZ_CHECK(::cohort::fuzz::IsClearRefusal(status), \
             "a refusal without a message: " + (status).ToString())
