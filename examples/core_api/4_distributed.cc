// Core API tutorial, stage 4: distributed training ("distributed increment").
//
// Stage 3 on several workers: each worker increments its own x by increment_by, as each
// worker of a data-parallel trial trains on its own slice of the batch. After every step the
// workers allgather their x (every worker gets every worker's value, as gradients are
// all-reduced), and the trial's x is their sum. Only the chief reports metrics, progress and
// checkpoints; every worker restores from the same checkpoint, and all stop at the same step
// when preempted.
//
//   cohort-launch --slots 2 -- build/bin/core_api_4_distributed
//       --config examples/core_api/4_distributed.yaml

#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "cohort/core.h"
#include "cohort/status.h"

namespace {

// One worker's state: its own x, and the steps every worker has done.
struct State {
  int64_t x = 0;
  int64_t steps = 0;
};

// The chief stores every worker's x (gathered first), so that each can resume its own.
absl::Status Save(cohort::core::Context& ctx, const State& state) {
  COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> xs, ctx.distributed().Gather(state.x));
  if (!ctx.distributed().is_chief()) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(auto checkpoint,
                          ctx.checkpoint().StorePath({{"steps_completed", state.steps}}));
  std::ofstream(checkpoint.path() + "/state.json")
      << nlohmann::json{{"xs", xs}, {"steps", state.steps}}.dump() << "\n";
  return checkpoint.Commit().status();
}

absl::StatusOr<State> Load(cohort::core::Context& ctx, const std::string& storage_id) {
  COHORT_ASSIGN_OR_RETURN(std::string dir, ctx.checkpoint().RestorePath(storage_id));
  std::ifstream in(dir + "/state.json");
  nlohmann::json saved = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const int rank = ctx.distributed().rank();
  if (saved.is_discarded() || !saved.contains("xs") || saved["xs"].size() <= size_t(rank)) {
    return absl::DataLossError("checkpoint " + storage_id + " has no x for rank " +
                               std::to_string(rank) + " (was it written with fewer slots?)");
  }
  return State{saved["xs"][rank].get<int64_t>(), saved["steps"].get<int64_t>()};
}

absl::Status Train(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  cohort::core::DistributedContext& dist = ctx->distributed();
  const int64_t increment_by = ctx->info().hparams.value("increment_by", int64_t{1});
  State state;
  if (!ctx->info().latest_checkpoint.empty()) {
    COHORT_ASSIGN_OR_RETURN(state, Load(*ctx, ctx->info().latest_checkpoint));
  }
  int64_t total = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::optional<cohort::core::SearcherOperation> op,
                            ctx->searcher().Next());
    if (!op) break;
    while (state.steps < op->length()) {
      state.x += increment_by;
      state.steps += 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // stands in for real work
      COHORT_ASSIGN_OR_RETURN(std::vector<int64_t> xs, dist.Allgather(state.x));
      total = std::accumulate(xs.begin(), xs.end(), int64_t{0});
      if (dist.is_chief()) {
        COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(
            state.steps, {{"x", total}, {"workers", xs.size()}}));
        COHORT_RETURN_IF_ERROR(op->ReportProgress(static_cast<double>(state.steps)));
      }
      if (state.steps % 10 == 0) COHORT_RETURN_IF_ERROR(Save(*ctx, state));
      COHORT_ASSIGN_OR_RETURN(bool preempt, ctx->preempt().ShouldPreempt());
      if (preempt) return Save(*ctx, state);
    }
    if (dist.is_chief()) {
      COHORT_RETURN_IF_ERROR(ctx->train().ReportValidationMetrics(state.steps, {{"x", total}}));
      COHORT_RETURN_IF_ERROR(op->ReportCompleted(static_cast<double>(total)));
    }
  }
  if (dist.is_chief()) {
    std::printf("done: %d workers, increment_by %lld, x = %lld\n", dist.size(),
                static_cast<long long>(increment_by), static_cast<long long>(total));
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 2 && std::string(argv[1]) == "--config" ? argv[2] : "";
  absl::Status status = Train(config);
  if (!status.ok()) {
    std::fprintf(stderr, "core_api_4_distributed: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
