// A Core API trial for faults_test's progress test (cohort::core only, no LibTorch): each of
// --steps steps takes --step-ms, then every rank allgathers its step and the chief reports it.
// At its start each rank appends "RANK PID" to the --pids file, so the test can stop one.
//
//   stall_trial --steps 400 --step-ms 50 --pids /tmp/ranks

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "cohort/core.h"
#include "cohort/status.h"

namespace {

absl::Status Train(int steps, int step_ms, const std::string& pids) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx, cohort::core::Init());
  cohort::core::DistributedContext& dist = ctx->distributed();
  if (std::FILE* out = std::fopen(pids.c_str(), "a")) {
    std::fprintf(out, "%d %d\n", dist.rank(), static_cast<int>(::getpid()));
    std::fclose(out);
  }
  for (int step = 1; step <= steps; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    COHORT_ASSIGN_OR_RETURN(std::vector<int> all, dist.Allgather(step));
    if (dist.is_chief()) {
      COHORT_RETURN_IF_ERROR(
          ctx->train().ReportTrainingMetrics(step, {{"ranks", static_cast<int>(all.size())}}));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 100, step_ms = 50;
  std::string pids = "/dev/null";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--steps" && absl::SimpleAtoi(value, &steps)) continue;
    if (flag == "--step-ms" && absl::SimpleAtoi(value, &step_ms)) continue;
    if (flag == "--pids") {
      pids = value;
      continue;
    }
    std::fprintf(stderr, "stall_trial: bad argument %s %s\n", flag.c_str(), value.c_str());
    return 2;
  }
  if (absl::Status s = Train(steps, step_ms, pids); !s.ok()) {
    std::fprintf(stderr, "stall_trial: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
