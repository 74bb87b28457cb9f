#pragma once
// Registers `cohort experiment|e ...` on the root CLI11 app: validate, create (--local through
// local_experiment.h, else against the master through remote_experiment.h), list|ls, describe,
// pause, activate and kill. list and describe print an aligned table, or JSON with --json.
// Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `experiment` command group to `root`. When one of its verbs runs (during
// root->parse), the verb's exit status goes to `context`'s exit code. `context` must outlive
// `root`.
void AddExperimentCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
