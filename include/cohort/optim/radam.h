#pragma once
// RAdam (Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", 2019,
// Algorithm 2; the same rule as torch.optim.RAdam) as a LibTorch optimizer, usable like
// torch::optim::Adam. At step t, with rho_inf = 2 / (1 - b2) - 1:
//   g = g + weight_decay * w
//   m = b1 m + (1 - b1) g            v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t)
//   rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
//   if rho_t > 5:  r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//                  w = w - lr * m_hat * r_t * sqrt(1 - b2^t) / (sqrt(v) + eps)
//   else:          w = w - lr * m_hat          (variance not yet tractable: SGD with momentum)
// Thread-compatible; state is saved and loaded with torch::save / torch::load.

#include <tuple>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include "cohort/optim/moment_state.h"

namespace cohort::runtime::optim {

struct RAdamOptions : public torch::optim::OptimizerCloneableOptions<RAdamOptions> {
  RAdamOptions(double lr = 1e-3);  // NOLINT(google-explicit-constructor): as AdamOptions
  TORCH_ARG(double, lr) = 1e-3;
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

class RAdam : public torch::optim::Optimizer {
 public:
  explicit RAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups,
                 RAdamOptions defaults = {});
  explicit RAdam(std::vector<torch::Tensor> params, RAdamOptions defaults = {})
      : RAdam({torch::optim::OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace cohort::runtime::optim
