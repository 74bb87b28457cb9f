#pragma once
// Registers the verbs that talk to a master (Determined's): `experiment|e create|list|describe|
// pause|activate|kill`, `trial|t logs|describe`, `task list`, `agent|a list|enable|disable`,
// `slot|s list`, `template|tpl list|set|describe|remove` and `cluster up|down`. Every list and
// describe prints an aligned table, or JSON with --json. The master is --master/-m, else
// $COHORT_MASTER, else the local cluster's (`cohort cluster up`). Not thread-safe (CLI setup).

#include <string>

#include "CLI/CLI.hpp"

namespace cohort::cli {

// `experiment` is the group AddExperimentCommands made; the others are created here.
// `master_flag` is the root's --master value (read when a verb runs).
void AddClusterCommands(CLI::App* root, CLI::App* experiment, const std::string* master_flag,
                        int* exit_code);

// `experiment create CONFIG CONTEXT_DIR [--template T] [--follow]` against a master: packs the
// context directory (tar.gz, at most 96 MB), submits, prints the id; --follow shows a progress
// line per trial until the experiment ends and returns 0 only when it COMPLETED.
int RunCreateRemote(const std::string& master_flag, const std::string& config_path,
                    const std::string& context_dir, const std::string& template_name, bool follow);

}  // namespace cohort::cli
