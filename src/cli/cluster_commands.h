#pragma once
// Registers `cohort cluster up|down` on the root CLI11 app. `cluster up [--agents N] [--slots K]
// [--port P]` starts a local master (SQLite under the user's data directory,
// client/local_cluster.h) and N agents of K slots in the background, waits until they are
// connected, records the URL and pids in cluster.json and prints the address; `cluster down`
// stops them (SIGTERM, then SIGKILL after 10 s). Their output goes to <data dir>/logs/.
// Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `cluster` command group to `root`; `context` must outlive `root`.
void AddClusterCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
