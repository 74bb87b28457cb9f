// The web interface test's long trial (long_grid.yaml): a Core API program that stands in for a
// profiled Trial API trial without LibTorch. Each batch it waits in phases named as the Trial
// API's loop names them (dataloader_next, then train_batch = forward + backward +
// optimizer_step), measures them with a steady clock, and the chief reports the measured means
// as training/timings/<phase> with a made-up loss that falls faster for a larger
// learning_rate, so the profiler tab has real step timings to chart. While profiling is on, every
// rank also appends each batch's timeline to RUN_DIR/profile/rank-<R>.jsonl in the Trial API's
// format (wire/step_profile.h, docs/observability.md), for the per-rank timings. Runs the
// searcher's length (batches of about 20 ms) and stops when preempted.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

// One batch's phases: mean milliseconds, and the spans [name, start_us, duration_us].
struct BatchTimes {
  std::map<std::string, double> ms;
  nlohmann::json spans = nlohmann::json::array();
  double unix_start = 0;
};

int64_t Micros(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from).count();
}

// Waits `ms` milliseconds and records the phase as it really took.
void Phase(BatchTimes& t, Clock::time_point batch, const char* phase, int ms) {
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const Clock::time_point end = Clock::now();
  t.ms[phase] += MsSince(start);
  t.spans.push_back({phase, Micros(batch, start), Micros(start, end)});
}

// One batch's phases, measured.
BatchTimes Batch() {
  BatchTimes t;
  t.unix_start =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Clock::time_point batch = Clock::now();
  Phase(t, batch, "dataloader_next", 3);
  const Clock::time_point train = Clock::now();
  Phase(t, batch, "forward", 7);
  Phase(t, batch, "backward", 8);
  Phase(t, batch, "optimizer_step", 2);
  t.ms["train_batch"] = MsSince(train);
  t.spans.push_back({"train_batch", Micros(batch, train), Micros(train, Clock::now())});
  t.spans.push_back({"step", 0, Micros(batch, Clock::now())});
  return t;
}

// Appends batch `n`'s timeline to RUN_DIR/profile/rank-<rank>.jsonl.
void WriteTimeline(cohort::core::Context& ctx, int64_t n, const BatchTimes& t) {
  const std::filesystem::path dir = std::filesystem::path(ctx.info().run_dir) / "profile";
  std::filesystem::create_directories(dir);
  const int rank = ctx.distributed().rank();
  std::ofstream(dir / ("rank-" + std::to_string(rank) + ".jsonl"), std::ios::app)
      << nlohmann::json{{"rank", rank}, {"batch", n}, {"time", t.unix_start}, {"phases", t.spans}}
             .dump()
      << "\n";
}

absl::Status Train(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  const bool chief = ctx->distributed().is_chief();
  const nlohmann::json& hparams = ctx->info().hparams;
  const double learning_rate = hparams.value("learning_rate", 0.01);
  const bool profiled = ctx->info().config && ctx->info().config->profiling.enabled;
  int64_t steps = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::optional<cohort::core::SearcherOperation> op,
                            ctx->searcher().Next());
    if (!op) break;
    double loss = 1;
    while (steps < op->length()) {
      const BatchTimes times = Batch();
      const std::map<std::string, double>& timings = times.ms;
      steps += 1;
      if (profiled) WriteTimeline(*ctx, steps, times);
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
