#pragma once
// LARS (You, Gitman, Ginsburg, "Large Batch Training of Convolutional Networks", 2017,
// Algorithm 1) as a LibTorch optimizer, usable like torch::optim::SGD. Per parameter tensor
// (a "layer"), with the L2 norms |w| and |g| of the tensor and its gradient:
//   local_lr = trust_coefficient * |w| / (|g| + weight_decay * |w|)   (1 when |w| or |g| is 0)
//   v = momentum * v + lr * local_lr * (g + weight_decay * w)
//   w = w - v
// Thread-compatible, like LibTorch's optimizers; state is saved and loaded with torch::save /
// torch::load.
//
// Example:
//   Lars lars(model->parameters(), LarsOptions(0.1).momentum(0.9).weight_decay(5e-4));

#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

namespace cohort::runtime::optim {

struct LarsOptions : public torch::optim::OptimizerCloneableOptions<LarsOptions> {
  LarsOptions(double lr = 0.1);  // NOLINT(google-explicit-constructor): as SGDOptions
  TORCH_ARG(double, lr) = 0.1;
  TORCH_ARG(double, momentum) = 0.9;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, trust_coefficient) = 0.001;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct LarsParamState : public torch::optim::OptimizerCloneableParamState<LarsParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

class Lars : public torch::optim::Optimizer {
 public:
  explicit Lars(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                LarsOptions defaults = {});
  explicit Lars(std::vector<torch::Tensor> params, LarsOptions defaults = {})
      : Lars({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace cohort::runtime::optim
