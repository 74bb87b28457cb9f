#pragma once
// ReadSmallFile: the whole of a file that should be small (a progress record, a pid, a secret, a
// checkpoint's metadata), read with a bound on its size. Many of the files Cohort reads are
// written by someone else (a trial's process, a user, the kernel), so none is read whole without
// one: a trial that writes gigabytes to its progress.json costs the agent an error message, not
// its memory. Thread-safe (each call opens its own descriptor).
//
// Example:
//   absl::StatusOr<std::string> text = ReadSmallFile(path, 1 << 20);
//   if (absl::IsNotFound(text.status())) ...  // nothing written yet

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace cohort {

// The bytes of the file at `path`. NotFound when it does not exist; ResourceExhausted when it
// holds more than `max_bytes` ("PATH holds more than N bytes, the most read of it"), checked
// before reading and again while reading (a file that grows meanwhile); FailedPrecondition
// naming the system's reason when it cannot be opened or read (a directory, no permission).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes);

}  // namespace cohort
