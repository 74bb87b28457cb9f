#pragma once
// Files only their owner may read: secrets (the first admin's password) and credentials (the
// CLI's login tokens). Thread-safe (each call works on its own file descriptors).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {

// Replaces `path` with `text` atomically: writes PATH.tmp-PID created with mode 0600 (never
// readable by others, not even briefly), syncs it, then renames it over `path`. Errors name the
// file and the system's reason (a full disk: ResourceExhausted "no space left on device in DIR
// writing FILE (needed N bytes, free M)"); on error `path` is unchanged and no PATH.tmp-PID is
// left.
absl::Status WritePrivateFile(const std::string& path, absl::string_view text);

// The secret in the file at `path` (the agents' cluster secret, the first admin's password),
// surrounding whitespace trimmed. NotFound when the file is missing; PermissionDenied when group
// or others may read or write it (fix: chmod 600 PATH); InvalidArgument when it is empty or
// unreadable (at most 64 KiB is read).
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

}  // namespace cohort
