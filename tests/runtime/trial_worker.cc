// A worker for the Trial API tests (trial_test.cc): a small CNN with dropout trained through
// RunTrial on Fashion-MNIST's test split (images 0-7999 train, 8000-9999 validate). With --out,
// rank 0 writes the latest checkpoint's weights there (raw fp32, module order). With
// --step-lr N, a StepLR (gamma 0.5) halves the rate every N optimizer steps. With
// --sigterm-at B --sigterm-rank R, rank R sends itself SIGTERM while training batch B (a
// preemption request from outside). With --unreduced-loss 1, TrainBatch returns each sample's
// loss instead of their mean (a mistake the runtime must name). Prints "DONE rank R batches N
// preempted P checkpoint ID". Exit 0 done, 1 error, 2 usage.

#include <signal.h>
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cohort/core.h"
#include "cohort/fashion_mnist.h"
#include "cohort/status.h"
#include "runtime/trial_runner.h"

namespace {

using cohort::runtime::Batch;
using cohort::runtime::TensorDataset;
using cohort::runtime::TrainResult;
using cohort::runtime::TrialContext;

struct Net : torch::nn::Module {
  Net() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 5).stride(2)));
    fc1 = register_module("fc1", torch::nn::Linear(4 * 12 * 12, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::relu(conv->forward(x)).flatten(1);
    h = torch::dropout(torch::relu(fc1->forward(h)), 0.3, is_training());
    return fc2->forward(h);
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

class SmallTrial : public cohort::runtime::Trial {
 public:
  int64_t step_lr = 0;
  int64_t sigterm_at = -1;
  int sigterm_rank = 0;
  bool unreduced_loss = false;  // TrainBatch returns each sample's loss (a trial's mistake)

  std::unique_ptr<torch::optim::LRScheduler> BuildLRScheduler(
      TrialContext&, torch::optim::Optimizer& optimizer) override {
    if (step_lr <= 0) return nullptr;
    return std::make_unique<torch::optim::StepLR>(optimizer, step_lr, 0.5);
  }
  std::shared_ptr<torch::nn::Module> BuildModel(TrialContext&) override {
    return std::make_shared<Net>();
  }
  std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(TrialContext& ctx,
                                                          torch::nn::Module& model) override {
    return std::make_unique<torch::optim::SGD>(
        model.parameters(),
        torch::optim::SGDOptions(ctx.hparams().value("learning_rate", 0.05)).momentum(0.9));
  }
  absl::StatusOr<TensorDataset> BuildTrainingData(TrialContext&) override {
    COHORT_RETURN_IF_ERROR(Load());
    return TensorDataset{data_.images.narrow(0, 0, 8000), data_.labels.narrow(0, 0, 8000)};
  }
  absl::StatusOr<TensorDataset> BuildValidationData(TrialContext&) override {
    COHORT_RETURN_IF_ERROR(Load());
    return TensorDataset{data_.images.narrow(0, 8000, 2000), data_.labels.narrow(0, 8000, 2000)};
  }
  TrainResult TrainBatch(TrialContext& ctx, torch::nn::Module& model, const Batch& batch) override {
    if (batches_++ == sigterm_at && ctx.rank() == sigterm_rank) ::raise(SIGTERM);
    auto& net = static_cast<Net&>(model);
    return {torch::cross_entropy_loss(net.forward(batch.inputs), batch.targets, {},
                                      unreduced_loss ? at::Reduction::None : at::Reduction::Mean),
            {}};
  }
  std::map<std::string, double> EvaluateBatch(TrialContext&, torch::nn::Module& model,
                                              const Batch& batch) override {
    auto& net = static_cast<Net&>(model);
    torch::Tensor out = net.forward(batch.inputs);
    return {
        {"loss", torch::cross_entropy_loss(out, batch.targets).item<double>()},
        {"accuracy", out.argmax(1).eq(batch.targets).to(torch::kFloat64).mean().item<double>()}};
  }

 private:
  absl::Status Load() {
    if (data_.images.defined()) return absl::OkStatus();
    COHORT_ASSIGN_OR_RETURN(data_, cohort::runtime::LoadFashionMnist(
                                       cohort::runtime::FashionMnistDir(), /*train=*/false));
    return absl::OkStatus();
  }
  cohort::runtime::FashionMnist data_;
  int64_t batches_ = 0;
};

}  // namespace

// The command line: every flag takes a value; false (after saying why) for an unknown one.
struct Flags {
  cohort::runtime::TrialRunOptions options;
  SmallTrial trial;
  std::string out, run_dir, profile;
};

// clang-format off
bool Set(Flags& f, const std::string& flag, const std::string& value) {
  cohort::runtime::TrialRunOptions& o = f.options;
  if (flag == "--global-batch") o.global_batch_size = std::stoll(value);
  else if (flag == "--max-batches") o.max_batches = std::stoll(value);
  else if (flag == "--validation-period") o.validation_period = std::stoll(value);
  else if (flag == "--checkpoint-period") o.checkpoint_period = std::stoll(value);
  else if (flag == "--run-dir") f.run_dir = value;
  else if (flag == "--restore") o.restore_from = value;
  else if (flag == "--step-lr") f.trial.step_lr = std::stoll(value);
  else if (flag == "--sigterm-at") f.trial.sigterm_at = std::stoll(value);
  else if (flag == "--sigterm-rank") f.trial.sigterm_rank = std::stoi(value);
  else if (flag == "--unreduced-loss") f.trial.unreduced_loss = value == "1";
  else if (flag == "--profile") f.profile = value;  // BEGIN:END, profiling's window
  else if (flag == "--initial-validation") o.perform_initial_validation = value == "1";
  else if (flag == "--out") f.out = value;
  else if (flag == "--searcher-metric") o.searcher_metric = value;
  else if (flag == "--checkpoint-policy") {  // best | all | none
    using Policy = cohort::runtime::CheckpointPolicy;
    o.checkpoint_policy = value == "all" ? Policy::kAll : value == "none" ? Policy::kNone : Policy::kBest;
  } else {
    std::fprintf(stderr, "trial_worker: unknown flag %s\n", flag.c_str());
    return false;
  }
  return true;
}
// clang-format on

int main(int argc, char** argv) {
  Flags f;
  f.options.global_batch_size = 16;
  f.options.seed = 1234;
  f.options.scheduling_unit = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!Set(f, argv[i], argv[i + 1])) return 2;
  }
  cohort::runtime::TrialRunOptions& options = f.options;
  SmallTrial& trial = f.trial;
  const std::string& out = f.out;
  const std::string& run_dir = f.run_dir;
  if (!f.profile.empty()) {
    const size_t colon = f.profile.find(':');
    options.profiling = {.enabled = true,
                         .begin_on_batch = std::stoll(f.profile.substr(0, colon)),
                         .end_after_batch = std::stoll(f.profile.substr(colon + 1)),
                         .run_dir = run_dir};
  }
  torch::set_num_threads(1);
  cohort::core::InitOptions init;
  init.run_dir = run_dir;
  auto ctx = cohort::core::Init(init);
  if (!ctx.ok()) {
    std::fprintf(stderr, "trial_worker: %s\n", ctx.status().ToString().c_str());
    return 1;
  }
  auto result = cohort::runtime::RunTrial(trial, options, **ctx);
  if (!result.ok()) {
    std::fprintf(stderr, "trial_worker: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const int rank = (*ctx)->distributed().rank();
  // The final weights, read back from the latest checkpoint (which the chief wrote last).
  if (!out.empty() && rank == 0) {
    Net net;
    torch::serialize::InputArchive archive;
    archive.load_from(result->latest_checkpoint_path + "/model.pt");
    net.load(archive);
    std::ofstream file(out, std::ios::binary);
    for (const torch::Tensor& p : net.parameters()) {
      torch::Tensor c = p.detach().contiguous();
      file.write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
    }
  }
  std::printf("DONE rank %d batches %lld preempted %d checkpoint %s\n", rank,
              static_cast<long long>(result->batches_completed), result->preempted ? 1 : 0,
              result->latest_checkpoint.c_str());
  return 0;
}
