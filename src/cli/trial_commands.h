#pragma once
// Registers `cohort trial|t ...` on the root CLI11 app: `logs ID [--rank R] [--follow]
// [--json]` prints a trial's log lines ("[rank=K] " before each worker's line, or one JSON
// object per line), `describe ID [--json]` its state, validation metrics and checkpoints.
// Not thread-safe (CLI setup runs once on the main thread).

#include <ostream>

#include "CLI/CLI.hpp"
#include "cli/command_context.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {

// Adds the `trial` command group to `root`; `context` must outlive `root`.
void AddTrialCommands(CLI::App* root, CommandContext* context);

// The trial's log policy matches as a table under "trial N: log policies matched:" (nothing
// when there are none), for `trial describe` and `experiment describe`.
void PrintLogPolicyMatches(std::ostream& out, const wire::TrialDescription& trial);

}  // namespace cohort::cli
