#include "cohort/optim/fused_sgd.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <string>

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

}  // namespace

torch::Tensor FusedSGD::step(LossClosure closure) { return Step(closure, /*zero_grad=*/false); }

torch::Tensor FusedSGD::StepAndZeroGrad(LossClosure closure) {
  return Step(closure, /*zero_grad=*/true);
}

torch::Tensor FusedSGD::Step(const LossClosure& closure, bool zero_grad) {
  bool fusable = true;
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto it = state_.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
      const bool buffer_ok =
          it == state_.end() ||
          Fusable(static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer());
      // A gradient with a graph (backward with create_graph) takes LibTorch's path, whose
      // zero_grad also detaches it.
      fusable =
          fusable && Fusable(p) && Fusable(p.grad()) && !p.grad().requires_grad() && buffer_ok;
    }
  }
  if (!fusable) {
    torch::Tensor loss = SGD::step(closure);
    if (zero_grad) this->zero_grad();
    return loss;
  }

  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
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
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      torch::Tensor buf;
      k.first = false;
      if (options.momentum() != 0) {
        const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
        auto it = state_.find(key);
        if (it == state_.end()) {
          buf = torch::empty_like(p, torch::MemoryFormat::Contiguous);
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(buf);
          state_[key] = std::move(state);
          k.first = true;
        } else {
          buf = static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer();
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
      if (zero_grad) grad.unsafeGetTensorImpl()->bump_version();
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
