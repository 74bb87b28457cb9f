#include "config/entrypoint.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace cohort::config {

std::vector<std::string> EntrypointArgv(const std::vector<std::string>& entrypoint) {
  std::vector<std::string> argv;
  for (const std::string& part : entrypoint) {
    std::istringstream words(part);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  return argv;
}

absl::StatusOr<std::vector<std::string>> ResolveEntrypoint(
    const std::vector<std::string>& entrypoint, const std::string& context_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> argv = EntrypointArgv(entrypoint);
  if (argv.empty()) {
    return absl::InvalidArgumentError(
        "the config has no entrypoint: set `entrypoint: ./my_trial` (a program in the context "
        "directory)");
  }
  const std::string program = argv[0];
  std::error_code ec;
  if (fs::path(program).is_absolute()) {
    if (::access(program.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("entrypoint ", program, ": not an executable file"));
    }
    return argv;
  }
  const fs::path in_context = fs::path(context_dir) / program;
  if (fs::exists(in_context, ec)) {
    if (::access(in_context.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("entrypoint ", program, ": ", in_context.string(), " is not executable"));
    }
    argv[0] = fs::absolute(in_context).lexically_normal().string();
  } else if (program.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("entrypoint ", program, ": not found in the context directory ", context_dir,
                     " (build the trial program first, or fix the path)"));
  }
  return argv;
}

}  // namespace cohort::config
