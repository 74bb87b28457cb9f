#pragma once
// `cohort trial profile ID [--follow] [--json] [--all-ranks] [--trace FILE [--from-batch N]
// [--to-batch M]]`: what the profiler measured of a trial (docs/observability.md).
//   * the system metrics: min / mean / max per series and machine over the profiling window;
//   * the step's timing breakdown: mean milliseconds per phase and share of a step, the
//     gradient wait and the communication's overlap with backward called out; rank 0's by
//     default, every rank's side by side with --all-ranks (from the step timelines; without
//     them, the chief's reported timings);
//   * --trace FILE: the step timelines of a batch range as a Trace Event Format file for
//     Perfetto or chrome://tracing (one track per rank, its communication thread beside it).
// Not thread-safe (CLI setup runs once on the main thread).

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// Adds `profile` to the `trial` command group; `context` must outlive it.
void AddProfileCommand(CLI::App* trial, CommandContext* context);

}  // namespace cohort::cli
