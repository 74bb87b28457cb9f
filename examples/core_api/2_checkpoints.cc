// Core API tutorial, stage 2: checkpoints, resuming, preemption.
//
// Stage 1 plus: every 10 steps the chief stores x in a checkpoint; at start the program resumes
// from the checkpoint the launcher names (COHORT_LATEST_CHECKPOINT, set by
// `cohort experiment create` on a restart) or --restore; after every step all workers ask
// ShouldPreempt (one collective vote), and on yes the chief checkpoints and everyone exits
// cleanly at the same step. SIGTERM to cohort-launch (or to any worker) asks for preemption.
//
//   cohort-launch --slots 2 --grace-period 30 -- build/bin/core_api_2_checkpoints
//       --config examples/core_api/2_checkpoints.yaml [--restore STORAGE_ID]

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cohort/core.h"
#include "cohort/status.h"

namespace {

struct State {
  int x = 0;
  int steps = 0;
};

absl::StatusOr<std::string> Save(cohort::core::Context& ctx, const State& state) {
  COHORT_ASSIGN_OR_RETURN(auto checkpoint,
                          ctx.checkpoint().StorePath({{"steps_completed", state.steps}}));
  // WriteFile checks every write: a full disk fails the checkpoint, never half-stores it.
  COHORT_RETURN_IF_ERROR(
      checkpoint.WriteFile("state", std::to_string(state.x) + " " + std::to_string(state.steps)));
  return checkpoint.Commit();
}

absl::StatusOr<State> Load(cohort::core::Context& ctx, const std::string& storage_id) {
  COHORT_ASSIGN_OR_RETURN(std::string dir, ctx.checkpoint().RestorePath(storage_id));
  State state;
  std::ifstream in(dir + "/state");
  if (!(in >> state.x >> state.steps)) {
    return absl::DataLossError("checkpoint " + storage_id + ": " + dir + "/state is unreadable");
  }
  return state;
}

absl::Status Train(const std::string& config, std::string restore) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  const bool chief = ctx->distributed().is_chief();
  if (restore.empty()) restore = ctx->info().latest_checkpoint;
  State state;
  if (!restore.empty()) {
    COHORT_ASSIGN_OR_RETURN(state, Load(*ctx, restore));
    if (chief)
      std::printf("resumed from %s at step %d, x = %d\n", restore.c_str(), state.steps, state.x);
  }
  while (state.steps < 100) {
    state.x += 1;
    state.steps += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // stands in for real work
    if (chief) {
      COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(state.steps, {{"x", state.x}}));
      if (state.steps % 10 == 0) {
        COHORT_RETURN_IF_ERROR(ctx->train().ReportValidationMetrics(state.steps, {{"x", state.x}}));
        COHORT_RETURN_IF_ERROR(Save(*ctx, state).status());
      }
    }
    COHORT_ASSIGN_OR_RETURN(bool preempt, ctx->preempt().ShouldPreempt());
    if (preempt) {
      if (chief) {
        COHORT_ASSIGN_OR_RETURN(std::string id, Save(*ctx, state));
        std::printf("preempted at step %d: resume with --restore %s\n", state.steps, id.c_str());
      }
      return absl::OkStatus();
    }
  }
  if (chief) std::printf("done: x = %d\n", state.x);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  std::string config, restore;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--config") config = argv[i + 1];
    if (flag == "--restore") restore = argv[i + 1];
  }
  absl::Status status = Train(config, restore);
  if (!status.ok()) {
    std::fprintf(stderr, "core_api_2_checkpoints: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
