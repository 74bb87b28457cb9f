#pragma once
// LAMB (You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes",
// 2019, Algorithm 2) as a LibTorch optimizer, usable like torch::optim::Adam. Per parameter
// tensor (a "layer"), at step t:
//   m = b1 m + (1 - b1) g            v = b2 v + (1 - b2) g^2
//   r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * w
//   w = w - lr * phi(|w|) / |r| * r,  phi(x) = x; the ratio is 1 when |w| or |r| is 0
// (norms are L2 over the tensor). Thread-compatible, like LibTorch's optimizers; state is
// saved and loaded with torch::save / torch::load.
//
// Example:
//   Lamb lamb(model->parameters(), LambOptions(1e-3).weight_decay(0.01));
//   loss.backward(); lamb.step(); lamb.zero_grad();

#include <tuple>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include "cohort/optim/moment_state.h"

namespace cohort::runtime::optim {

struct LambOptions : public torch::optim::OptimizerCloneableOptions<LambOptions> {
  LambOptions(double lr = 1e-3);  // NOLINT(google-explicit-constructor): as AdamOptions
  TORCH_ARG(double, lr) = 1e-3;
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

class Lamb : public torch::optim::Optimizer {
 public:
  explicit Lamb(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                LambOptions defaults = {});
  explicit Lamb(std::vector<torch::Tensor> params, LambOptions defaults = {})
      : Lamb({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace cohort::runtime::optim
