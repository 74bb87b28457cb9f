#pragma once
// The models of `cohort-bench train` (and of bench/train_vs_ddp.py, which builds the same ones
// in PyTorch): both take Fashion-MNIST images [N, 1, 28, 28].
//   cnn: Determined's MNIST example: conv 1->32 3x3, conv 32->64 3x3, 2x2 max-pool,
//        dropout 0.25, linear 9216->128, dropout 0.5, linear 128->10, log-softmax
//        (about 1.2 M parameters; compute-heavy).
//   mlp: 784->4096->4096->10 with ReLU, logits (about 20 M parameters; communication-heavy).

#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace cohort::bench {

class BenchModel : public torch::nn::Module {
 public:
  virtual torch::Tensor Forward(const torch::Tensor& images) = 0;
  // Mean loss of the model's output against labels.
  virtual torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) = 0;
};

// "cnn" or "mlp"; nullptr otherwise.
std::shared_ptr<BenchModel> MakeBenchModel(const std::string& name);

}  // namespace cohort::bench
