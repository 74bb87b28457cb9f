// Fashion-MNIST with the Trial API: Determined's MNIST example network (two convolutions, max
// pooling, dropout, two linear layers), trained with SGD and momentum. Hyperparameters come from
// the experiment config (const.yaml, distributed.yaml): learning_rate, momentum, n_filters1,
// n_filters2, dropout1, dropout2, global_batch_size. Validation: the 10,000 test images.
//
//   cohort-launch --slots 2 -- build/bin/fashion_mnist_trial
//       --config examples/fashion_mnist/distributed.yaml   (one command line)

#include <torch/torch.h>

#include "common/status_macros.h"
#include "runtime/fashion_mnist.h"
#include "runtime/trial_main.h"

namespace {

using cohort::runtime::Batch;
using cohort::runtime::TensorDataset;
using cohort::runtime::TrainResult;
using cohort::runtime::TrialContext;
namespace nn = torch::nn;
namespace F = torch::nn::functional;

class Net : public nn::Module {
 public:
  explicit Net(const nlohmann::json& hp)
      : dropout1_(hp.value("dropout1", 0.25)), dropout2_(hp.value("dropout2", 0.5)) {
    const int64_t f1 = hp.value("n_filters1", 32), f2 = hp.value("n_filters2", 64);
    conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, f1, 3)));
    conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(f1, f2, 3)));
    fc1_ = register_module("fc1", nn::Linear(f2 * 12 * 12, 128));
    fc2_ = register_module("fc2", nn::Linear(128, 10));
  }
  torch::Tensor Forward(const torch::Tensor& images) {
    torch::Tensor x = torch::relu(conv1_->forward(images));
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    x = F::dropout(x, F::DropoutFuncOptions().p(dropout1_).training(is_training()));
    x = torch::relu(fc1_->forward(x.flatten(1)));
    x = F::dropout(x, F::DropoutFuncOptions().p(dropout2_).training(is_training()));
    return torch::log_softmax(fc2_->forward(x), 1);
  }

 private:
  double dropout1_, dropout2_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

class FashionMnistTrial : public cohort::runtime::Trial {
 public:
  std::shared_ptr<nn::Module> BuildModel(TrialContext& ctx) override {
    return std::make_shared<Net>(ctx.hparams());
  }
  std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(TrialContext& ctx,
                                                          nn::Module& model) override {
    return std::make_unique<torch::optim::SGD>(
        model.parameters(), torch::optim::SGDOptions(ctx.hparams().value("learning_rate", 0.01))
                                .momentum(ctx.hparams().value("momentum", 0.9)));
  }
  absl::StatusOr<TensorDataset> BuildTrainingData(TrialContext& ctx) override {
    COHORT_ASSIGN_OR_RETURN(auto d, cohort::runtime::LoadFashionMnist(Dir(ctx), /*train=*/true));
    return TensorDataset{d.images, d.labels};
  }
  absl::StatusOr<TensorDataset> BuildValidationData(TrialContext& ctx) override {
    COHORT_ASSIGN_OR_RETURN(auto d, cohort::runtime::LoadFashionMnist(Dir(ctx), /*train=*/false));
    return TensorDataset{d.images, d.labels};
  }
  TrainResult TrainBatch(TrialContext&, nn::Module& model, const Batch& batch) override {
    torch::Tensor out = static_cast<Net&>(model).Forward(batch.inputs);
    return {torch::nll_loss(out, batch.targets), {}};
  }
  std::map<std::string, double> EvaluateBatch(TrialContext&, nn::Module& model,
                                              const Batch& batch) override {
    torch::Tensor out = static_cast<Net&>(model).Forward(batch.inputs);
    return {{"validation_loss", torch::nll_loss(out, batch.targets).item<double>()},
            {"accuracy",
             out.argmax(1).eq(batch.targets).to(torch::kFloat64).mean().item<double>()}};
  }

 private:
  static std::string Dir(TrialContext& ctx) {
    return ctx.data().value("dir", cohort::runtime::FashionMnistDir());
  }
};

}  // namespace

int main(int argc, char** argv) {
  FashionMnistTrial trial;
  return cohort::runtime::TrialMain(argc, argv, trial);
}
