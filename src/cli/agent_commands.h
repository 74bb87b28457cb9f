#pragma once
// Registers the machine-side nouns on the root CLI11 app: `cohort agent|a list|ls [--json]`,
// `agent enable|disable ID` (a disabled agent takes no new trials) and `cohort slot|s list|ls
// [--json]` (every slot of every agent and what runs on it). Not thread-safe (CLI setup runs
// once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `agent` and `slot` command groups to `root`; `context` must outlive `root`.
void AddAgentCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
