#pragma once
// Registers the `cohort experiment ...` verbs (validate, create --local; later list, describe)
// on the root CLI11 app. Each verb group lives in its own *_commands.h/.cc and is added by
// main.cc. Not thread-safe (CLI setup runs once on the main thread).

#include <string>

#include "CLI/CLI.hpp"

namespace cohort::cli {

// Adds the `experiment` command group (validate, create) to `root` and returns it. When one of
// its verbs runs (during root->parse), the verb's exit status is stored in *exit_code.
// `master_flag`: the root's --master value, read when a verb runs.
CLI::App* AddExperimentCommands(CLI::App* root, const std::string* master_flag, int* exit_code);

}  // namespace cohort::cli
