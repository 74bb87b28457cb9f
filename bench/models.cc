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

// torchvision's BasicBlock: two 3x3 convolutions with batch norm, and a 1x1 projection of the
// input when the block changes the resolution or the width.
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride) {
    conv1_ = register_module(
        "conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    bn1_ = register_module("bn1", nn::BatchNorm2d(out));
    conv2_ = register_module(
        "conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
    bn2_ = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      downsample_ = register_module(
          "downsample",
          nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                         nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    return torch::relu(y + (downsample_ ? downsample_->forward(x) : x));
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  nn::Sequential downsample_{nullptr};
};

class ResNet18 : public BenchModel {
 public:
  ResNet18() {
    conv1_ = register_module(
        "conv1", nn::Conv2d(nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn1_ = register_module("bn1", nn::BatchNorm2d(64));
    int64_t in = 64;
    for (int stage = 0; stage < 4; ++stage) {  // torchvision's names: layer1.0.conv1.weight
      const int64_t out = int64_t{64} << stage;
      nn::Sequential layer;
      for (int block = 0; block < 2; ++block) {
        layer->push_back(std::make_shared<BasicBlock>(in, out, stage > 0 && block == 0 ? 2 : 1));
        in = out;
      }
      layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc_ = register_module("fc", nn::Linear(512, 1000));
  }
  torch::Tensor Forward(const torch::Tensor& images) override {
    torch::Tensor x = torch::relu(bn1_->forward(conv1_->forward(images)));
    x = torch::max_pool2d(x, 3, 2, 1);
    for (nn::Sequential& layer : layers_) x = layer->forward(x);
    return fc_->forward(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& labels) override {
    return torch::cross_entropy_loss(output, labels);
  }
  std::vector<int64_t> SampleShape() const override { return {3, 224, 224}; }
  int64_t Classes() const override { return 1000; }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<BenchModel> MakeBenchModel(const std::string& name) {
  if (name == "cnn") return std::make_shared<Cnn>();
  if (name == "mlp") return std::make_shared<Mlp>();
  if (name == "resnet18") return std::make_shared<ResNet18>();
  return nullptr;
}

}  // namespace cohort::bench
