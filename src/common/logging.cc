#include "common/logging.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/terminal_text.h"

namespace cohort::logging {
namespace {

Level ThresholdFromEnv() {
  const char* value = std::getenv("COHORT_LOG_LEVEL");
  if (value == nullptr) return Level::kInfo;
  if (strcasecmp(value, "DEBUG") == 0) return Level::kDebug;
  if (strcasecmp(value, "WARNING") == 0) return Level::kWarning;
  if (strcasecmp(value, "ERROR") == 0) return Level::kError;
  return Level::kInfo;
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

bool Enabled(Level level) {
  static const Level threshold = ThresholdFromEnv();
  return level >= threshold;
}

LogMessage::LogMessage(Level level, const char* file, int line) : level_(level) {
  const char* base = std::strrchr(file, '/');
  stream_ << LevelName(level_) << " " << (base ? base + 1 : file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  // One line whatever the message holds (a user's name, a trial's words): nothing can forge a
  // line of the log or send escapes to the terminal showing it.
  std::string text = EscapeControl(stream_.str());
  text.push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

}  // namespace cohort::logging
