#include "cohort/optim/moment_state.h"

#include <torch/torch.h>

#include <memory>
#include <string>

namespace cohort::runtime::optim {

void MomentState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void MomentState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

MomentState& MomentState::For(const torch::Tensor& param, ParamStateMap& optimizer_state) {
  const ParamStateKey key = ParamKey(param);
  auto it = optimizer_state.find(key);
  if (it == optimizer_state.end()) {
    auto fresh = std::make_unique<MomentState>();
    fresh->exp_avg(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(param, torch::MemoryFormat::Preserve));
    it = optimizer_state.emplace(key, std::move(fresh)).first;
  }
  return static_cast<MomentState&>(*it->second);
}

}  // namespace cohort::runtime::optim
