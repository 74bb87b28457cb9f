// A Core API trial for faults_test's storage-full test (cohort::core only, no LibTorch): it
// trains --steps steps and stores a checkpoint of --bytes bytes after each (the file "state":
// the step, then padding), resuming from the checkpoint the master names. It prints
// "stored checkpoint ID at step N" and "resumed from ID at step N"; a failure is printed as
// "checkpoint_trial: STATUS" and exits 1. On several ranks only the chief reports and stores;
// every rank resumes from the checkpoint.
//
//   checkpoint_trial --steps 2 --bytes 614400

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "cohort/core.h"
#include "cohort/status.h"

namespace {

// The step stored in checkpoint `storage_id` (its state file starts with it).
absl::StatusOr<int> Restore(cohort::core::Context& ctx, const std::string& storage_id) {
  COHORT_ASSIGN_OR_RETURN(nlohmann::json metadata, ctx.checkpoint().GetMetadata(storage_id));
  COHORT_ASSIGN_OR_RETURN(std::string dir, ctx.checkpoint().RestorePath(storage_id));
  std::FILE* in = std::fopen((dir + "/state").c_str(), "rb");
  int step = -1;
  if (in == nullptr || std::fscanf(in, "%d", &step) != 1 ||
      step != metadata.value("steps_completed", -2)) {
    if (in != nullptr) std::fclose(in);
    return absl::DataLossError("checkpoint " + storage_id + ": " + dir +
                               "/state does not hold the step its metadata names");
  }
  std::fclose(in);
  return step;
}

absl::Status Train(int steps, size_t bytes) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<cohort::core::Context> ctx, cohort::core::Init());
  int step = 0;
  if (const std::string& latest = ctx->info().latest_checkpoint; !latest.empty()) {
    COHORT_ASSIGN_OR_RETURN(step, Restore(*ctx, latest));
    std::printf("resumed from %s at step %d\n", latest.c_str(), step);
  }
  while (step < steps) {
    ++step;
    if (!ctx->distributed().is_chief()) continue;  // only the chief reports and stores
    COHORT_RETURN_IF_ERROR(ctx->train().ReportTrainingMetrics(step, {{"loss", 1.0 / step}}));
    COHORT_ASSIGN_OR_RETURN(auto checkpoint,
                            ctx->checkpoint().StorePath({{"steps_completed", step}}));
    std::string state = std::to_string(step) + "\n";
    state.resize(std::max(bytes, state.size()), 'x');
    COHORT_RETURN_IF_ERROR(checkpoint.WriteFile("state", state));
    COHORT_ASSIGN_OR_RETURN(std::string id, checkpoint.Commit());
    std::printf("stored checkpoint %s at step %d\n", id.c_str(), step);
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 2;
  size_t bytes = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const bool ok = (flag == "--steps" && absl::SimpleAtoi(argv[i + 1], &steps)) ||
                    (flag == "--bytes" && absl::SimpleAtoi(argv[i + 1], &bytes));
    if (!ok) {
      std::fprintf(stderr, "checkpoint_trial: bad flag %s %s (--steps N --bytes B)\n", argv[i],
                   argv[i + 1]);
      return 2;
    }
  }
  if (absl::Status status = Train(steps, bytes); !status.ok()) {
    std::fprintf(stderr, "checkpoint_trial: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
