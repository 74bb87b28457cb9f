#pragma once
// Registers `cohort checkpoint|c list EXPERIMENT [--json]` and `cohort checkpoint list --trial
// ID [--json]`: an experiment's (or one trial's) checkpoints with their trial, batch, the
// searcher metric of the validation at that batch, state (ACTIVE, or DELETED by the checkpoint
// GC when the experiment ended) and storage path, in an aligned table; and `cohort checkpoint
// download UUID DIR`: the checkpoint's files from the master into DIR (new or empty), which is
// filled only once the whole checkpoint has arrived; `cohort checkpoint describe UUID [--json]`
// (its experiment, trial, batch, state and the model versions it is registered as) and
// `cohort checkpoint delete UUID [--yes]` (an ended experiment's; kept while a version holds it).
// Not thread-safe (CLI setup runs once on the main thread).

#include <string>

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds the `checkpoint` command group to `root`; `context` must outlive `root`.
void AddCheckpointCommands(CLI::App* root, CommandContext* context);

// `checkpoint download`'s work (also `model download`'s): streams checkpoint `storage_id`'s
// files from the master into `dir` (new, or an empty directory), which is filled only once the
// whole checkpoint has arrived; prints what arrived. Returns the exit code.
int DownloadCheckpoint(const CommandContext& context, const std::string& storage_id,
                       const std::string& dir);

}  // namespace cohort::cli
