#pragma once
// `cohort cluster up [--agents N] [--slots K] [--port P]` starts a local master (SQLite under
// the user's data directory, client/local_cluster.h) and N agents of K slots in the background,
// waits until they are connected, records the URL and pids in cluster.json and prints the
// address; `cohort cluster down` stops them (SIGTERM, then SIGKILL after 10 s). Their output
// goes to <data dir>/logs/. Not thread-safe (CLI setup).

#include "CLI/CLI.hpp"

namespace cohort::cli {

void AddClusterUpDown(CLI::App* root, int* exit_code);

}  // namespace cohort::cli
