#include "cohort/optim/fused_sgd.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/optim/param_state_key.h"
#include "runtime/optim/closure.h"
#include "runtime/optim/sgd_kernel.h"

namespace cohort::runtime::optim {
namespace {

// Elements per parallel task when LibTorch runs more than one intra-op thread (memory-bound:
// large pieces).
constexpr int64_t kGrain = 1 << 16;

bool Fusable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.layout() == torch::kStrided && t.is_contiguous();
}

// The momentum buffer SGD keeps under `key`; undefined before the parameter's first step.
torch::Tensor MomentumBuffer(const ParamStateMap& state, const ParamStateKey& key) {
  auto it = state.find(key);
  if (it == state.end()) return torch::Tensor();
  return static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer();
}

// Starts the parameter's state with `buf` as its momentum buffer (SGDParamState, as SGD's).
void AddMomentumBuffer(ParamStateMap& state, ParamStateKey key, torch::Tensor buf) {
  auto fresh = std::make_unique<torch::optim::SGDParamState>();
  fresh->momentum_buffer(std::move(buf));
  state[std::move(key)] = std::move(fresh);
}

// One parameter's update by the runtime's one-pass kernel (fp32, contiguous, CPU).
void KernelStep(torch::Tensor& p, SgdKernelParams k, ParamStateMap& state) {
  torch::Tensor grad = p.grad();
  torch::Tensor buf;
  k.first = false;
  if (k.momentum != 0) {
    ParamStateKey key = ParamKey(p);
    buf = MomentumBuffer(state, key);
    if (!buf.defined()) {
      buf = torch::empty_like(p, torch::MemoryFormat::Contiguous);
      AddMomentumBuffer(state, std::move(key), buf);
      k.first = true;
    }
  }
  float* pp = p.data_ptr<float>();
  float* gp = grad.data_ptr<float>();
  float* bp = buf.defined() ? buf.data_ptr<float>() : nullptr;
  at::parallel_for(0, p.numel(), kGrain, [&](int64_t begin, int64_t end) {
    SgdUpdate(pp + begin, gp + begin, bp == nullptr ? nullptr : bp + begin, end - begin, k);
  });
  // The tensors were written through raw pointers: tell autograd they changed (a tensor
  // saved for backward before this step would otherwise be used silently).
  p.unsafeGetTensorImpl()->bump_version();
  if (k.zero_grad) grad.unsafeGetTensorImpl()->bump_version();
}

// Each parameter's momentum buffer after this step's update: a copy of the gradient on a
// parameter's first step (as SGD::step), else buf * momentum + grad * (1 - dampening).
std::vector<torch::Tensor> MomentumBuffers(const std::vector<torch::Tensor>& params,
                                           const std::vector<torch::Tensor>& grads,
                                           const torch::optim::SGDOptions& options,
                                           ParamStateMap& state) {
  std::vector<torch::Tensor> bufs(params.size()), old_bufs, old_grads;
  for (size_t i = 0; i < params.size(); ++i) {
    ParamStateKey key = ParamKey(params[i]);
    bufs[i] = MomentumBuffer(state, key);
    if (!bufs[i].defined()) {
      bufs[i] = torch::clone(grads[i]).detach();
      AddMomentumBuffer(state, std::move(key), bufs[i]);
    } else {
      old_bufs.push_back(bufs[i]);
      old_grads.push_back(grads[i]);
    }
  }
  if (!old_bufs.empty()) {
    at::_foreach_mul_(old_bufs, options.momentum());
    at::_foreach_add_(old_bufs, old_grads, 1 - options.dampening());
  }
  return bufs;
}

// LibTorch's SGD::step, operation for operation (so bit for bit), on lists of tensors.
void MultiTensorStep(std::vector<torch::optim::OptimizerParamGroup>& groups, ParamStateMap& state) {
  for (auto& group : groups) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    if (options.weight_decay() != 0) {
      grads = at::_foreach_add(grads, params, options.weight_decay());
    }
    std::vector<torch::Tensor> steps = grads;  // d_p of SGD::step
    if (options.momentum() != 0) {
      steps = MomentumBuffers(params, grads, options, state);
      if (options.nesterov()) steps = at::_foreach_add(grads, steps, options.momentum());
    }
    at::_foreach_add_(params, steps, -1 * options.lr());
  }
}

}  // namespace

torch::Tensor FusedSGD::step(LossClosure closure) { return Step(closure, /*zero_grad=*/false); }

torch::Tensor FusedSGD::StepAndZeroGrad(LossClosure closure) {
  return Step(closure, /*zero_grad=*/true);
}

FusedSGD::Path FusedSGD::ChoosePath() {
  bool fusable = true, multi_tensor = true;
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor buf = MomentumBuffer(state_, ParamKey(p));
      // A gradient with a graph (backward with create_graph) takes LibTorch's path, whose
      // zero_grad also detaches it; so does a sparse one.
      const bool plain = !p.grad().requires_grad() && p.grad().layout() == torch::kStrided &&
                         p.layout() == torch::kStrided;
      fusable =
          fusable && plain && Fusable(p) && Fusable(p.grad()) && (!buf.defined() || Fusable(buf));
      multi_tensor = multi_tensor && plain;
    }
  }
  return fusable ? Path::kFusedKernel : multi_tensor ? Path::kMultiTensor : Path::kLibTorch;
}

torch::Tensor FusedSGD::Step(const LossClosure& closure, bool zero_grad) {
  last_path_ = ChoosePath();
  if (last_path_ == Path::kLibTorch) {
    torch::Tensor loss = SGD::step(closure);
    if (zero_grad) this->zero_grad();
    return loss;
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  if (last_path_ == Path::kMultiTensor) {
    MultiTensorStep(param_groups_, state_);
    if (zero_grad) this->zero_grad();
    return loss;
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    SgdKernelParams k;
    // Rounded to fp32 as LibTorch rounds its Scalar arguments.
    k.weight_decay = static_cast<float>(options.weight_decay());
    k.momentum = static_cast<float>(options.momentum());
    k.dampening_scale = static_cast<float>(1 - options.dampening());
    k.neg_lr = static_cast<float>(-1 * options.lr());
    k.nesterov = options.nesterov();
    k.zero_grad = zero_grad;
    for (auto& p : group.params()) {
      if (p.grad().defined()) KernelStep(p, k, state_);
    }
  }
  return loss;
}

void StepAndZeroGrad(torch::optim::Optimizer& optimizer) {
  if (auto* fused = dynamic_cast<FusedSGD*>(&optimizer)) {
    fused->StepAndZeroGrad();
    return;
  }
  optimizer.step();
  optimizer.zero_grad();
}

}  // namespace cohort::runtime::optim
