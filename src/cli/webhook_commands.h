#pragma once
// Registers `cohort webhook ...` on the root CLI11 app (Determined's `det webhook`; the
// master's webhooks, docs/design/0023; admins only): create --url URL [--type default|slack]
// --trigger STATE[,STATE...] [--template TEXT] [--allow-local] (prints the signing secret,
// once), list|ls [--json], delete ID, test ID, deliveries ID [--limit N] [--json].
// Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `webhook` command group to `root`; `context` must outlive `root`.
void AddWebhookCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
