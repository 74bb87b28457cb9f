#pragma once
// FusedSGD: torch::optim::SGD with a one-pass update. Same options (SGDOptions: lr, momentum,
// dampening, weight_decay, nesterov), same state (SGDParamState's momentum_buffer) and the same
// archive, so checkpoints move freely between the two; the same arithmetic, so the weights are
// bit-identical to torch::optim::SGD's (optim_test checks it).
//
// Why: LibTorch's SGD walks each parameter's memory three or four times (mul_, add_, add_) and
// zero_grad once more; for a 20 M-parameter model that is ~40 ms per step on one core, against
// ~9 ms for one fused pass that also zeros the gradient (the runtime's sgd_kernel). Dense contiguous fp32
// CPU parameters take the fused path; anything else (fp64, sparse, non-contiguous, a device)
// falls back to torch::optim::SGD::step for the whole step.
//
// StepAndZeroGrad(optimizer) (below) is step() followed by zero_grad(), in one pass for FusedSGD.
// The Trial API's loop uses it.
//
// Example:
//   FusedSGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
//   loss.backward();
//   StepAndZeroGrad(sgd);

#include <torch/optim/sgd.h>

#include <utility>
#include <vector>

namespace cohort::runtime::optim {

class FusedSGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;

  torch::Tensor step(LossClosure closure = nullptr) override;
  // step(), then every gradient is zero (as after zero_grad()), in one pass over memory.
  torch::Tensor StepAndZeroGrad(LossClosure closure = nullptr);

 private:
  torch::Tensor Step(const LossClosure& closure, bool zero_grad);
};

// optimizer.step(); optimizer.zero_grad(); fused when `optimizer` is a FusedSGD.
void StepAndZeroGrad(torch::optim::Optimizer& optimizer);

}  // namespace cohort::runtime::optim
