#pragma once
// EvaluateClosure: the loss closure an optimizer's step() may take, run with gradients enabled
// (as LibTorch's own optimizers run it, inside their NoGradGuard); an undefined tensor without one.

#include <ATen/core/grad_mode.h>
#include <torch/optim/optimizer.h>

namespace cohort::runtime::optim {

inline torch::Tensor EvaluateClosure(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace cohort::runtime::optim
