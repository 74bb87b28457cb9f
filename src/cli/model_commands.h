#pragma once
// Registers `cohort model ...` on the root CLI11 app (Determined's `det model`; the master's
// model registry, docs/design/0023): create NAME [--description] [--label]... [--metadata JSON],
// list|ls [--json], describe NAME [--json], register-version NAME CHECKPOINT [--name]
// [--comment] [--notes] [--label]... [--metadata JSON], update NAME [--name] [--description]
// [--label]... [--no-labels] [--metadata JSON], download NAME[:VERSION] DIR (its checkpoint, as
// `checkpoint download`), delete NAME [--yes], delete-version NAME VERSION [--yes]. Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `model` command group to `root`; `context` must outlive `root`.
void AddModelCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
