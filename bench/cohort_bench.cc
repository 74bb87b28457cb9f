// cohort-bench: Cohort's benchmarks. Run it under a launcher that sets the worker environment
// (cohort-launch, or anything setting COHORT_RANK/COHORT_SIZE/...; see docs/architecture.md §3);
// rank 0 prints one JSON line per measurement.
//
// Example:
//   cohort-launch --slots 2 -- cohort-bench allreduce --bytes 16777216 --transport shm
//   cohort-launch --slots 2 -- cohort-bench train --model mlp --per-slot-batch 64 --steps 50
//   cohort-bench master --agents 200 --slots 8 --experiments 100   # no launcher: one process

#include "CLI/CLI.hpp"
#include "bench/bench_commands.h"
#include "common/command_line.h"

int main(int argc, char** argv) {
  CLI::App app{"cohort-bench: Cohort benchmarks (run one process per rank under a launcher)"};
  app.require_subcommand(1);
  cohort::bench::AllreduceOptions allreduce;
  CLI::App* allreduce_cmd = cohort::bench::AddAllreduceCommand(app, allreduce);
  cohort::bench::TrainOptions train;
  CLI::App* train_cmd = cohort::bench::AddTrainCommand(app, train);
#ifndef COHORT_BENCH_TRAIN_ONLY  // a COHORT_TRAIN_ONLY build has no client to drive a master
  cohort::bench::MasterBenchOptions master;
  CLI::App* master_cmd = cohort::bench::AddMasterCommand(app, master);
#endif
  if (std::optional<int> exit = cohort::ParseCommandLine(app, "cohort-bench", argc, argv)) {
    return *exit;
  }
#ifndef COHORT_BENCH_TRAIN_ONLY
  if (master_cmd->parsed()) return cohort::bench::RunMasterCommand(master);
#endif
  if (allreduce_cmd->parsed()) return cohort::bench::RunAllreduceCommand(allreduce);
  if (train_cmd->parsed()) return cohort::bench::RunTrainCommand(train);
  return cohort::kUsageExit;
}
