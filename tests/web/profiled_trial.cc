// The web interface test's long trial (long_grid.yaml): a Core API program that stands in for a
// profiled Trial API trial without LibTorch. Each batch it waits in phases named as the Trial
// API's loop names them (dataloader_next, then train_batch = forward + backward +
// optimizer_step), measures them with a steady clock, and the chief reports the measured means
// as training/timings/<phase> with a made-up loss that falls faster for a larger
// learning_rate, so the profiler tab has real step timings to chart. Runs the searcher's
// length (batches of about 20 ms) and stops when preempted.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "cohort/core.h"
#include "cohort/status.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Waits `ms` milliseconds and adds the time it really took to timings[phase].
void Phase(std::map<std::string, double>& timings, const char* phase, int ms) {
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  timings[phase] += MsSince(start);
}

// One batch's phases, measured.
std::map<std::string, double> Batch() {
  std::map<std::string, double> timings;
  Phase(timings, "dataloader_next", 3);
  const Clock::time_point train = Clock::now();
  Phase(timings, "forward", 7);
  Phase(timings, "backward", 8);
  Phase(timings, "optimizer_step", 2);
  timings["train_batch"] = MsSince(train);
  return timings;
}

absl::Status Train(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  const bool chief = ctx->distributed().is_chief();
  const nlohmann::json& hparams = ctx->info().hparams;
  const double learning_rate = hparams.value("learning_rate", 0.01);
  int64_t steps = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::optional<cohort::core::SearcherOperation> op,
                            ctx->searcher().Next());
    if (!op) break;
    double loss = 1;
    while (steps < op->length()) {
      const std::map<std::string, double> timings = Batch();
      steps += 1;
      loss = 1.0 / std::sqrt(1.0 + learning_rate * static_cast<double>(steps));
      if (chief) {
        COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(
            steps, {{"loss", loss}, {"timings", nlohmann::json(timings)}}));
        COHORT_RETURN_IF_ERROR(op->ReportProgress(static_cast<double>(steps)));
        if (steps % 50 == 0) {
          COHORT_RETURN_IF_ERROR(ctx->train().ReportValidationMetrics(steps, {{"loss", loss}}));
        }
      }
      COHORT_ASSIGN_OR_RETURN(bool preempt, ctx->preempt().ShouldPreempt());
      if (preempt) return absl::OkStatus();
    }
    if (chief) COHORT_RETURN_IF_ERROR(op->ReportCompleted(loss));
  }
  if (chief) std::printf("done: %lld batches\n", static_cast<long long>(steps));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 2 && std::string(argv[1]) == "--config" ? argv[2] : "";
  absl::Status status = Train(config);
  if (!status.ok()) {
    std::fprintf(stderr, "web_ui_profiled_trial: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
