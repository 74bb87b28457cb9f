#pragma once
// Where `cohort cluster up` keeps the local cluster: $XDG_DATA_HOME/cohort or
// ~/.local/share/cohort (the master's SQLite database, its contexts, the agents' work
// directories, logs, and cluster.json with the master's URL and the processes' pids).

#include <optional>
#include <string>

namespace cohort::client {

// The data directory (not created).
std::string LocalClusterDir();
// The URL recorded by `cohort cluster up`, when its cluster.json exists.
std::optional<std::string> LocalClusterUrl();

}  // namespace cohort::client
