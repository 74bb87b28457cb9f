#pragma once
// Registers the `cohort experiment ...` verbs (validate, create --local; later list, describe)
// on the root CLI11 app. Each verb group lives in its own *_commands.h/.cc and is added by
// main.cc. Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"

namespace cohort::cli {

// Adds the `experiment` command group to `root`. When one of its verbs runs (during
// root->parse), the verb's exit status is stored in *exit_code.
void AddExperimentCommands(CLI::App* root, int* exit_code);

}  // namespace cohort::cli
