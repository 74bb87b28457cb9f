#include "cohort/optim/lamb.h"

#include <torch/torch.h>

#include <cmath>

#include "runtime/optim/closure.h"

namespace cohort::runtime::optim {

LambOptions::LambOptions(double lr) : lr_(lr) {}

void LambOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
}

void LambOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
}

Lamb::Lamb(std::vector<torch::optim::OptimizerParamGroup> param_groups, LambOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<LambOptions>(defaults)) {
  TORCH_CHECK(defaults.lr() >= 0, "LAMB: invalid learning rate ", defaults.lr());
  TORCH_CHECK(defaults.eps() >= 0, "LAMB: invalid eps ", defaults.eps());
  const auto [b1, b2] = defaults.betas();
  TORCH_CHECK(0 <= b1 && b1 < 1 && 0 <= b2 && b2 < 1, "LAMB: betas must be in [0, 1), got (", b1,
              ", ", b2, ")");
  TORCH_CHECK(defaults.weight_decay() >= 0, "LAMB: invalid weight_decay ", defaults.weight_decay());
}

torch::Tensor Lamb::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const LambOptions&>(group.options());
    const auto [b1, b2] = options.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "LAMB does not support sparse gradients");
      MomentState& state = MomentState::For(p, state_);
      state.step(state.step() + 1);
      state.exp_avg().mul_(b1).add_(grad, 1 - b1);
      state.exp_avg_sq().mul_(b2).addcmul_(grad, grad, 1 - b2);
      const double correction1 = 1 - std::pow(b1, state.step());
      const double correction2 = 1 - std::pow(b2, state.step());
      torch::Tensor update =
          (state.exp_avg() / correction1)
              .div_((state.exp_avg_sq() / correction2).sqrt_().add_(options.eps()));
      if (options.weight_decay() != 0) update.add_(p, options.weight_decay());
      const double w_norm = p.norm().item<double>();
      const double r_norm = update.norm().item<double>();
      const double trust = (w_norm > 0 && r_norm > 0) ? w_norm / r_norm : 1.0;
      p.add_(update, -options.lr() * trust);
    }
  }
  return loss;
}

void Lamb::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<MomentState, LambOptions>(archive, *this);
}

void Lamb::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<MomentState, LambOptions>(archive, *this);
}

}  // namespace cohort::runtime::optim
