// A worker for the Trial API tests (trial_test.cc): a small CNN with dropout trained through
// RunTrial on Fashion-MNIST's test split (images 0-7999 train, 8000-9999 validate). With --out,
// rank 0 writes the final checkpoint's weights there (raw fp32, module order).
// Exit 0 done, 1 error, 2 usage.

#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "comm/comm_factory.h"
#include "common/status_macros.h"
#include "runtime/fashion_mnist.h"
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
  TrainResult TrainBatch(TrialContext&, torch::nn::Module& model, const Batch& batch) override {
    auto& net = static_cast<Net&>(model);
    return {torch::cross_entropy_loss(net.forward(batch.inputs), batch.targets), {}};
  }
  std::map<std::string, double> EvaluateBatch(TrialContext&, torch::nn::Module& model,
                                              const Batch& batch) override {
    auto& net = static_cast<Net&>(model);
    torch::Tensor out = net.forward(batch.inputs);
    return {{"loss", torch::cross_entropy_loss(out, batch.targets).item<double>()},
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
};

}  // namespace

int main(int argc, char** argv) {
  cohort::runtime::TrialRunOptions options;
  options.global_batch_size = 16;
  options.seed = 1234;
  options.scheduling_unit = 4;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--global-batch") options.global_batch_size = std::stoll(value);
    else if (flag == "--max-batches") options.max_batches = std::stoll(value);
    else if (flag == "--validation-period") options.validation_period = std::stoll(value);
    else if (flag == "--checkpoint-period") options.checkpoint_period = std::stoll(value);
    else if (flag == "--checkpoint-dir") options.checkpoint_dir = value;
    else if (flag == "--restore") options.restore_from = value;
    else if (flag == "--metrics") options.metrics_path = value;
    else if (flag == "--out") out = value;
    else {
      std::fprintf(stderr, "trial_worker: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  torch::set_num_threads(1);
  auto comm = cohort::comm::CreateCommunicatorFromEnv({});
  if (!comm.ok()) {
    std::fprintf(stderr, "trial_worker: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  SmallTrial trial;
  absl::Status status = cohort::runtime::RunTrial(trial, options, **comm);
  if (!status.ok()) {
    std::fprintf(stderr, "trial_worker: %s\n", status.ToString().c_str());
    return 1;
  }
  // The final weights, read back from the final checkpoint (which the chief wrote at the end).
  if (!out.empty() && (*comm)->rank() == 0) {
    Net net;
    torch::serialize::InputArchive archive;
    archive.load_from(options.checkpoint_dir + "/batch-" + std::to_string(options.max_batches) +
                      "/model.pt");
    net.load(archive);
    std::ofstream file(out, std::ios::binary);
    for (const torch::Tensor& p : net.parameters()) {
      torch::Tensor c = p.detach().contiguous();
      file.write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
    }
  }
  std::printf("DONE rank %d\n", (*comm)->rank());
  return 0;
}
