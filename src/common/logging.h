#pragma once
// Minimal leveled logging to stderr, one whole line per message (written with a single
// write(2) so lines from several threads never interleave mid-line).
// Thread-safe.
//
// Example:
//   COHORT_LOG(INFO) << "rendezvous at " << addr;
//   COHORT_LOG(WARNING) << "dropping " << n << " samples";
//
// COHORT_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR; default INFO) filters messages.

#include <sstream>

namespace cohort::logging {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// True when messages at `level` are printed.
bool Enabled(Level level);

class LogMessage {
 public:
  LogMessage(Level level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  Level level_;
  std::ostringstream stream_;
};

}  // namespace cohort::logging

#define COHORT_LOG_LEVEL_DEBUG ::cohort::logging::Level::kDebug
#define COHORT_LOG_LEVEL_INFO ::cohort::logging::Level::kInfo
#define COHORT_LOG_LEVEL_WARNING ::cohort::logging::Level::kWarning
#define COHORT_LOG_LEVEL_ERROR ::cohort::logging::Level::kError

#define COHORT_LOG(severity)                                                  \
  if (!::cohort::logging::Enabled(COHORT_LOG_LEVEL_##severity)) {             \
  } else                                                                      \
    ::cohort::logging::LogMessage(COHORT_LOG_LEVEL_##severity, __FILE__, __LINE__).stream()
