#pragma once
// Registers `cohort task list|ls [--json]` on the root CLI11 app: every waiting or running
// trial with its slots, priority, agents and why it waits. Not thread-safe (CLI setup runs once
// on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `task` command group to `root`; `context` must outlive `root`.
void AddTaskCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
