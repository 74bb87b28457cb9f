#include "bench/models.h"

#include <torch/torch.h>

namespace cohort::bench {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

class Cnn : public BenchModel {
 public:
  Cnn() {
    conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3)));
    conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3)));
    fc1_ = register_module("fc1", nn::Linear(9216, 128));
    fc2_ = register_module("fc2", nn::Linear(128, 10));
  }
  torch::Tensor Forward(const torch::Tensor& images) override {
    torch::Tensor x = torch::relu(conv1_->forward(images));
    x = torch::relu(conv2_->forward(x));
    x = F::dropout(torch::max_pool2d(x, 2), F::DropoutFuncOptions().p(0.25).training(is_training()));
    x = torch::relu(fc1_->forward(x.flatten(1)));
    x = F::dropout(x, F::DropoutFuncOptions().p(0.5).training(is_training()));
    return torch::log_softmax(fc2_->forward(x), 1);
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) override {
    return torch::nll_loss(output, labels);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

class Mlp : public BenchModel {
 public:
  Mlp() {
    fc1_ = register_module("fc1", nn::Linear(784, 4096));
    fc2_ = register_module("fc2", nn::Linear(4096, 4096));
    fc3_ = register_module("fc3", nn::Linear(4096, 10));
  }
  torch::Tensor Forward(const torch::Tensor& images) override {
    torch::Tensor x = torch::relu(fc1_->forward(images.flatten(1)));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) override {
    return torch::cross_entropy_loss(output, labels);
  }

 private:
  nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

}  // namespace

std::shared_ptr<BenchModel> MakeBenchModel(const std::string& name) {
  if (name == "cnn") return std::make_shared<Cnn>();
  if (name == "mlp") return std::make_shared<Mlp>();
  return nullptr;
}

}  // namespace cohort::bench
