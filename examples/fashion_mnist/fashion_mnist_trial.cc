// Fashion-MNIST with the Trial API: Determined's MNIST example network (two convolutions, max
// pooling, dropout, two linear layers), trained with SGD and momentum. Hyperparameters come from
// the experiment config (const.yaml, distributed.yaml): learning_rate, momentum, n_filters1,
// n_filters2, dropout1, dropout2, global_batch_size. Validation: the 10,000 test images.
//
//   cohort-launch --slots 2 -- build/bin/fashion_mnist_trial
//       --config examples/fashion_mnist/distributed.yaml   (one command line)
//
// Built as any user program is (examples/CMakeLists.txt): public headers ("cohort/...") and its
// own files only, linking cohort::trial.

#include <torch/torch.h>

#include <cstdlib>
#include <string>

#include "cohort/fashion_mnist.h"
#include "cohort/optim/fused_sgd.h"
#include "cohort/status.h"
#include "cohort/trial_main.h"
#include "fashion_mnist/net.h"

namespace {

using cohort::examples::Net;
using cohort::runtime::Batch;
using cohort::runtime::TensorDataset;
using cohort::runtime::TrainResult;
using cohort::runtime::TrialContext;
namespace nn = torch::nn;

class FashionMnistTrial : public cohort::runtime::Trial {
 public:
  std::shared_ptr<nn::Module> BuildModel(TrialContext& ctx) override {
    return std::make_shared<Net>(ctx.hparams());
  }
  std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(TrialContext& ctx,
                                                          nn::Module& model) override {
    return std::make_unique<cohort::runtime::optim::FusedSGD>(
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
    return {
        {"validation_loss", torch::nll_loss(out, batch.targets).item<double>()},
        {"accuracy", out.argmax(1).eq(batch.targets).to(torch::kFloat64).mean().item<double>()}};
  }

 private:
  // COHORT_DATA_DIR, when set, wins over the config's data.dir (as the configs say): a machine
  // whose copy of the dataset lives elsewhere runs the same config.
  static std::string Dir(TrialContext& ctx) {
    const char* env = std::getenv("COHORT_DATA_DIR");
    if (env != nullptr && *env != '\0') return env;
    return ctx.data().value("dir", cohort::runtime::FashionMnistDir());
  }
};

}  // namespace

int main(int argc, char** argv) {
  FashionMnistTrial trial;
  return cohort::runtime::TrialMain(argc, argv, trial);
}
