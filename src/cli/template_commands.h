#pragma once
// Registers `cohort template|tpl ...` on the root CLI11 app: list|ls [--details] [--json],
// set NAME FILE (create or replace from YAML), describe NAME [--json], remove|rm NAME. An
// experiment names a stored template with `experiment create --template NAME`. Not thread-safe
// (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `template` command group to `root`; `context` must outlive `root`.
void AddTemplateCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
