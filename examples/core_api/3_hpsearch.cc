// Core API tutorial, stage 3: hyperparameters and the searcher.
//
// Stage 2 plus: the increment comes from the trial's hyperparameters (increment_by), the
// length from the searcher (searcher.max_length), progress is reported to the searcher, and the
// operation completes with the searcher's metric (x). With a grid searcher,
// `cohort experiment create --local examples/core_api/3_hpsearch.yaml build/bin` runs one trial
// per increment_by, each given its hyperparameters through COHORT_HPARAMS.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <thread>

#include "cohort/core.h"
#include "cohort/status.h"

namespace {

struct State {
  int64_t x = 0;
  int64_t steps = 0;
};

absl::StatusOr<std::string> Save(cohort::core::Context& ctx, const State& state) {
  COHORT_ASSIGN_OR_RETURN(auto checkpoint,
                          ctx.checkpoint().StorePath({{"steps_completed", state.steps}}));
  std::ofstream(checkpoint.path() + "/state") << state.x << " " << state.steps << "\n";
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

absl::Status Train(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  const bool chief = ctx->distributed().is_chief();
  const nlohmann::json& hparams = ctx->info().hparams;
  if (!hparams.contains("increment_by") || !hparams["increment_by"].is_number_integer()) {
    return absl::InvalidArgumentError("hyperparameters.increment_by (an integer) is needed, got " +
                                      hparams.dump());
  }
  const int64_t increment_by = hparams["increment_by"].get<int64_t>();
  State state;
  if (!ctx->info().latest_checkpoint.empty()) {
    COHORT_ASSIGN_OR_RETURN(state, Load(*ctx, ctx->info().latest_checkpoint));
  }
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::optional<cohort::core::SearcherOperation> op,
                            ctx->searcher().Next());
    if (!op) break;
    while (state.steps < op->length()) {
      state.x += increment_by;
      state.steps += 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // stands in for real work
      if (chief) {
        COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(state.steps, {{"x", state.x}}));
        COHORT_RETURN_IF_ERROR(op->ReportProgress(static_cast<double>(state.steps)));
        if (state.steps % 10 == 0) COHORT_RETURN_IF_ERROR(Save(*ctx, state).status());
      }
      COHORT_ASSIGN_OR_RETURN(bool preempt, ctx->preempt().ShouldPreempt());
      if (preempt) {
        if (chief) COHORT_RETURN_IF_ERROR(Save(*ctx, state).status());
        return absl::OkStatus();
      }
    }
    if (chief) {
      COHORT_RETURN_IF_ERROR(ctx->train().ReportValidationMetrics(state.steps, {{"x", state.x}}));
      COHORT_RETURN_IF_ERROR(op->ReportCompleted(static_cast<double>(state.x)));
    }
  }
  if (chief) {
    std::printf("done: increment_by %lld, x = %lld\n", static_cast<long long>(increment_by),
                static_cast<long long>(state.x));
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 2 && std::string(argv[1]) == "--config" ? argv[2] : "";
  absl::Status status = Train(config);
  if (!status.ok()) {
    std::fprintf(stderr, "core_api_3_hpsearch: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
