#pragma once
// The shared cluster's queue from the CLI (docs/scheduling.md; Determined's `det job`):
//   cohort resource-pool list [--json]           each pool: scheduler, preemption, agents,
//                                                slots used/total, trials running/queued
//   cohort job list [--pool NAME] [--json]       the jobs (experiments with queued or running
//                                                trials) in the order the scheduler serves them
//   cohort job update ID [--priority N] [--weight W] [--max-slots N]
//                        [--ahead-of ID | --behind-of ID]
//   cohort experiment set priority|weight|max-slots ID VALUE
// Owners change their own jobs, admins any (the master decides). Not thread-safe (CLI setup
// runs once on the main thread).

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds `resource-pool` and `job` to `root`; `context` must outlive `root`.
void AddJobCommands(CLI::App* root, CommandContext* context);
// `experiment set FIELD ID VALUE` for the scheduling fields (priority, weight, max-slots): the
// job update, or kExitUsage for a value that is not a number. Returns the exit code.
int SetSchedulingField(const CommandContext& context, const std::string& field, int64_t id,
                       const std::string& value);

}  // namespace cohort::cli
