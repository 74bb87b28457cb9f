#pragma once
// FusedSGD: torch::optim::SGD with a one-pass update. Same options (SGDOptions: lr, momentum,
// dampening, weight_decay, nesterov), same state (SGDParamState's momentum_buffer) and the same
// archive, so checkpoints move freely between the two; the same arithmetic, so the weights are
// bit-identical to torch::optim::SGD's (optim_test checks it).
//
// Why: LibTorch's SGD walks each parameter's memory three or four times (mul_, add_, add_) and
// zero_grad once more; for a 20 M-parameter model that is ~40 ms per step on one core, against
// ~9 ms for one fused pass that also zeros the gradient (the runtime's sgd_kernel). On a GPU it
// launches three or four kernels per parameter, ~200 a step for a ResNet-18.
//
// Each step takes one of three paths, for all parameters together (last_path() says which):
// - kFusedKernel: every parameter with a gradient is dense contiguous fp32 on the CPU: the
//   runtime's one-pass kernel.
// - kMultiTensor: any other dense parameters (a GPU, fp64, non-contiguous): SGD::step's
//   operations on lists of tensors (at::_foreach_*, a few kernel launches per group, as
//   PyTorch's Python SGD does on a GPU by default), the same arithmetic, so still bit-identical.
// - kLibTorch: a sparse gradient or one with a graph (backward with create_graph):
//   torch::optim::SGD::step itself.
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
  // step(), then every gradient as zero_grad() leaves it: zeroed in the same pass on the fused
  // kernel's path; on the others zero_grad() itself (undefined, in LibTorch 2.x).
  torch::Tensor StepAndZeroGrad(LossClosure closure = nullptr);

  enum class Path { kNone, kFusedKernel, kMultiTensor, kLibTorch };
  // The path the last step took (kNone before the first).
  Path last_path() const { return last_path_; }

 private:
  Path ChoosePath();
  torch::Tensor Step(const LossClosure& closure, bool zero_grad);

  Path last_path_ = Path::kNone;
};

// optimizer.step(); optimizer.zero_grad(); fused when `optimizer` is a FusedSGD.
void StepAndZeroGrad(torch::optim::Optimizer& optimizer);

}  // namespace cohort::runtime::optim
