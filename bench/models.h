#pragma once
// The models of `cohort-bench train` (and of bench/train_vs_ddp.py and bench/train_vs_torch.py,
// which build the same ones in PyTorch):
//   cnn: Determined's MNIST example: conv 1->32 3x3, conv 32->64 3x3, 2x2 max-pool,
//        dropout 0.25, linear 9216->128, dropout 0.5, linear 128->10, log-softmax
//        (about 1.2 M parameters; compute-heavy). Fashion-MNIST images [N, 1, 28, 28].
//   mlp: 784->4096->4096->10 with ReLU, logits (about 20 M parameters; communication-heavy).
//        Fashion-MNIST images.
//   resnet18: ResNet-18 as torchvision builds it (7x7 stem, max-pool, BasicBlocks [2, 2, 2, 2]
//        of 64-512 channels with batch norm, average pool, linear 512->1000; 11.7 M
//        parameters): a larger convolutional network, on synthetic [N, 3, 224, 224] images.

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace cohort::bench {

// One Fashion-MNIST image: what cnn and mlp take.
inline const std::vector<int64_t> kFashionMnistSampleShape = {1, 28, 28};

class BenchModel : public torch::nn::Module {
 public:
  virtual torch::Tensor Forward(const torch::Tensor& images) = 0;
  // Mean loss of the model's output against labels.
  virtual torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) = 0;
  // One sample's shape and the number of classes: Fashion-MNIST's and 10 for the models that
  // train on it; the others train on synthetic data of their shape.
  virtual std::vector<int64_t> SampleShape() const { return kFashionMnistSampleShape; }
  virtual int64_t Classes() const { return 10; }
};

// "cnn", "mlp" or "resnet18"; nullptr otherwise.
std::shared_ptr<BenchModel> MakeBenchModel(const std::string& name);

}  // namespace cohort::bench
