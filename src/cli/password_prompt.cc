#include "cli/password_prompt.h"

#include <termios.h>
#include <unistd.h>

#include <iostream>

namespace cohort::cli {

absl::StatusOr<std::string> ReadPassword(const std::string& prompt) {
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  termios saved{};
  if (terminal) {
    std::cerr << prompt << std::flush;
    if (::tcgetattr(STDIN_FILENO, &saved) == 0) {
      termios quiet = saved;
      quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
      ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
  }
  std::string line;
  const bool read = static_cast<bool>(std::getline(std::cin, line));
  if (terminal) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    std::cerr << "\n";
  }
  if (!read) return absl::InvalidArgumentError("no password given (standard input ended)");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

absl::StatusOr<std::string> ReadNewPassword(const std::string& prompt) {
  absl::StatusOr<std::string> first = ReadPassword(prompt);
  if (!first.ok() || ::isatty(STDIN_FILENO) != 1) return first;
  absl::StatusOr<std::string> again = ReadPassword("Again: ");
  if (!again.ok()) return again;
  if (*again != *first) return absl::InvalidArgumentError("the two passwords differ");
  return first;
}

}  // namespace cohort::cli
