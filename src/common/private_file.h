#pragma once
// Files only their owner may read: secrets (the first admin's password) and credentials (the
// CLI's login tokens). Thread-safe (each call works on its own file descriptors).

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort {

// Replaces `path` with `text` atomically: writes PATH.tmp-PID created with mode 0600 (never
// readable by others, not even briefly), then renames it over `path`. Errors name the file and
// the system's reason; on error `path` is unchanged.
absl::Status WritePrivateFile(const std::string& path, absl::string_view text);

}  // namespace cohort
