#include "cohort/optim/lars.h"

#include <torch/torch.h>

#include "cohort/optim/param_state_key.h"
#include "runtime/optim/closure.h"

namespace cohort::runtime::optim {

LarsOptions::LarsOptions(double lr) : lr_(lr) {}

void LarsOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(trust_coefficient);
}

void LarsOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, trust_coefficient);
}

void LarsParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
}

void LarsParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
}

Lars::Lars(std::vector<torch::optim::OptimizerParamGroup> param_groups, LarsOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<LarsOptions>(defaults)) {
  TORCH_CHECK(defaults.lr() >= 0, "LARS: invalid learning rate ", defaults.lr());
  TORCH_CHECK(defaults.momentum() >= 0, "LARS: invalid momentum ", defaults.momentum());
  TORCH_CHECK(defaults.weight_decay() >= 0, "LARS: invalid weight_decay ", defaults.weight_decay());
  TORCH_CHECK(defaults.trust_coefficient() > 0, "LARS: trust_coefficient must be > 0, got ",
              defaults.trust_coefficient());
}

torch::Tensor Lars::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const LarsOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "LARS does not support sparse gradients");
      const double w_norm = p.norm().item<double>();
      const double g_norm = p.grad().norm().item<double>();
      const double local_lr =
          (w_norm > 0 && g_norm > 0)
              ? options.trust_coefficient() * w_norm / (g_norm + options.weight_decay() * w_norm)
              : 1.0;
      torch::Tensor update = p.grad().clone();
      if (options.weight_decay() != 0) update.add_(p, options.weight_decay());
      update.mul_(options.lr() * local_lr);
      const ParamStateKey key = ParamKey(p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto fresh = std::make_unique<LarsParamState>();
        fresh->momentum_buffer(update);
        it = state_.emplace(key, std::move(fresh)).first;
      } else {
        auto& state = static_cast<LarsParamState&>(*it->second);
        state.momentum_buffer().mul_(options.momentum()).add_(update);
      }
      p.sub_(static_cast<LarsParamState&>(*it->second).momentum_buffer());
    }
  }
  return loss;
}

void Lars::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LarsParamState, LarsOptions>(archive, *this);
}

void Lars::load(torch::serialize::InputArchive& archive) {
  torch::optim::serialize<LarsParamState, LarsOptions>(archive, *this);
}

}  // namespace cohort::runtime::optim
