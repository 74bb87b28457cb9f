#pragma once
// ResolveEntrypoint: the argv that runs a config's `entrypoint` inside a context directory, as
// `cohort experiment create --local` and the agent both need it. A string entrypoint may carry
// arguments (split on whitespace); an absolute program path is used as it is; otherwise the
// program is taken from the context directory when it is there (it must be executable), else
// looked up in PATH when it has no '/'.
// Thread-safe (reads the file system only).

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cohort::config {

// The argv of `entrypoint`: each element split on whitespace (a string entrypoint may carry
// arguments). Empty when it has no words.
std::vector<std::string> EntrypointArgv(const std::vector<std::string>& entrypoint);

// Errors (InvalidArgument) name the entrypoint and what is wrong: empty ("the config has no
// entrypoint: ..."), not found in the context directory, not executable.
absl::StatusOr<std::vector<std::string>> ResolveEntrypoint(
    const std::vector<std::string>& entrypoint, const std::string& context_dir);

}  // namespace cohort::config
