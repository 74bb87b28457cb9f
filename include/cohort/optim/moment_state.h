#pragma once
// MomentState: the per-parameter state of the Adam family (RAdam, LAMB): the step count and the
// first and second moment estimates, saved and loaded with the optimizer (torch::save/load).
// Thread-compatible.

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include <cstdint>

#include "cohort/optim/param_state_key.h"

namespace cohort::runtime::optim {

struct MomentState : public torch::optim::OptimizerCloneableParamState<MomentState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;

  // The state of `param` in `optimizer_state`, created with zero moments on first use.
  static MomentState& For(const torch::Tensor& param, ParamStateMap& optimizer_state);
};

}  // namespace cohort::runtime::optim
