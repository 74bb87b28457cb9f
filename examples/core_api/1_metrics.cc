// Core API tutorial, stage 1: report metrics.
//
// The "training" is incrementing an integer, so every line is about the Core API. The program
// keeps its own loop; core::Init() joins the trial's workers and returns the contexts. The
// chief reports x as a training metric after every step and as a validation metric every 10.
//
//   cohort-launch --slots 2 -- build/bin/core_api_1_metrics --config examples/core_api/1_metrics.yaml
//   (or: cohort experiment create --local examples/core_api/1_metrics.yaml build/bin)
// Metrics land in cohort-run/metrics.jsonl (or $COHORT_RUN_DIR).
//
// Built as any user program is (examples/CMakeLists.txt): it includes only the public headers
// ("cohort/core.h", "cohort/status.h") and links cohort::core, without LibTorch.

#include <chrono>
#include <cstdio>
#include <thread>

#include "cohort/core.h"
#include "cohort/status.h"

namespace {

absl::Status Train(const std::string& config) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx,
                          cohort::core::Init({.config_path = config}));
  const bool chief = ctx->distributed().is_chief();
  int x = 0;
  for (int steps = 1; steps <= 100; ++steps) {
    x += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // stands in for real work
    if (chief) {
      COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(steps, {{"x", x}}));
      if (steps % 10 == 0) {
        COHORT_RETURN_IF_ERROR(ctx->train().ReportValidationMetrics(steps, {{"x", x}}));
      }
    }
  }
  if (chief) std::printf("done: x = %d\n", x);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config = argc > 2 && std::string(argv[1]) == "--config" ? argv[2] : "";
  absl::Status status = Train(config);
  if (!status.ok()) {
    std::fprintf(stderr, "core_api_1_metrics: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
