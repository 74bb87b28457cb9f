#pragma once
// The network of the Fashion-MNIST examples: Determined's MNIST example (two 3x3 convolutions,
// 2x2 max pooling, dropout, linear to 128, dropout, linear to 10, log-softmax), its widths and
// dropout rates taken from the hyperparameters n_filters1, n_filters2, dropout1, dropout2.
// Shared by the training and inference examples, which include it as "fashion_mnist/net.h"
// (examples/ is on their include path).

#include <torch/torch.h>

#include "nlohmann/json.hpp"

namespace cohort::examples {

class Net : public torch::nn::Module {
 public:
  explicit Net(const nlohmann::json& hp)
      : dropout1_(hp.value("dropout1", 0.25)), dropout2_(hp.value("dropout2", 0.5)) {
    namespace nn = torch::nn;
    const int64_t f1 = hp.value("n_filters1", 32), f2 = hp.value("n_filters2", 64);
    conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, f1, 3)));
    conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(f1, f2, 3)));
    fc1_ = register_module("fc1", nn::Linear(f2 * 12 * 12, 128));
    fc2_ = register_module("fc2", nn::Linear(128, 10));
  }

  // Log-probabilities [N, 10] of images [N, 1, 28, 28].
  torch::Tensor Forward(const torch::Tensor& images) {
    namespace F = torch::nn::functional;
    torch::Tensor x = torch::relu(conv1_->forward(images));
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    x = F::dropout(x, F::DropoutFuncOptions().p(dropout1_).training(is_training()));
    x = torch::relu(fc1_->forward(x.flatten(1)));
    x = F::dropout(x, F::DropoutFuncOptions().p(dropout2_).training(is_training()));
    return torch::log_softmax(fc2_->forward(x), 1);
  }

 private:
  double dropout1_, dropout2_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

}  // namespace cohort::examples
