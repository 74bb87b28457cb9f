#include "cohort/optim/radam.h"

#include <torch/torch.h>

#include <cmath>

#include "runtime/optim/closure.h"

namespace cohort::runtime::optim {

RAdamOptions::RAdamOptions(double lr) : lr_(lr) {}

void RAdamOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
}

void RAdamOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
}

RAdam::RAdam(std::vector<torch::optim::OptimizerParamGroup> param_groups, RAdamOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<RAdamOptions>(defaults)) {
  TORCH_CHECK(defaults.lr() >= 0, "RAdam: invalid learning rate ", defaults.lr());
  TORCH_CHECK(defaults.eps() >= 0, "RAdam: invalid eps ", defaults.eps());
  const auto [b1, b2] = defaults.betas();
  TORCH_CHECK(0 <= b1 && b1 < 1 && 0 <= b2 && b2 < 1, "RAdam: betas must be in [0, 1), got (", b1,
              ", ", b2, ")");
  TORCH_CHECK(defaults.weight_decay() >= 0, "RAdam: invalid weight_decay ",
              defaults.weight_decay());
}

torch::Tensor RAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const RAdamOptions&>(group.options());
    const auto [b1, b2] = options.betas();
    const double rho_inf = 2 / (1 - b2) - 1;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "RAdam does not support sparse gradients");
      torch::Tensor grad = p.grad();
      if (options.weight_decay() != 0) grad = grad.add(p, options.weight_decay());
      MomentState& state = MomentState::For(p, state_);
      state.step(state.step() + 1);
      const double t = static_cast<double>(state.step());
      state.exp_avg().mul_(b1).add_(grad, 1 - b1);
      state.exp_avg_sq().mul_(b2).addcmul_(grad, grad, 1 - b2);
      const double correction1 = 1 - std::pow(b1, t);
      const double correction2 = 1 - std::pow(b2, t);
      torch::Tensor m_hat = state.exp_avg() / correction1;
      const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / correction2;
      if (rho_t > 5) {
        const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                      ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        torch::Tensor adaptive =
            std::sqrt(correction2) / state.exp_avg_sq().sqrt().add_(options.eps());
        p.sub_(m_hat.mul_(adaptive).mul_(options.lr() * rect));
      } else {
        p.sub_(m_hat.mul_(options.lr()));
      }
    }
  }
  return loss;
}

void RAdam::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<MomentState, RAdamOptions>(archive, *this);
}

void RAdam::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<MomentState, RAdamOptions>(archive, *this);
}

}  // namespace cohort::runtime::optim
