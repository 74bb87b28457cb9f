#pragma once
// Automatic mixed precision for the Trial API on a GPU slot (optimizations.mixed_precision other
// than O0; docs/design/0013-gpus.md): the forward pass under LibTorch's CUDA autocast (fp16 for
// the operations autocast deems safe, fp32 for the rest; the weights stay fp32) and dynamic loss
// scaling, as PyTorch's torch.amp.autocast and torch.amp.GradScaler do.
//
// CudaAutocast: RAII; CUDA autocast to fp16 on this thread for its scope, the previous state
// restored and the cast cache cleared at the end. Works with LibTorch 1.13's API (Debian's) and
// 2.x's.
//
// GradScaler: Scale(loss) multiplies the loss by the current scale before backward, so small fp16
// gradients do not flush to zero; UnscaleGradients divides every gradient of the optimizer's
// parameters by the scale and says whether all are finite (one host sync per step, as PyTorch's
// GradScaler.step); Update(finite) halves the scale after a step with inf/NaN gradients (that
// step must be skipped) and doubles it after growth_interval finite steps in a row. ToJson/
// FromJson carry the scale and the count of finite steps through a checkpoint (as PyTorch's
// GradScaler.state_dict), so a resumed trial goes on where it stopped instead of at init_scale.
// Thread-compatible.
//
// Example (one training step):
//   GradScaler scaler;
//   torch::Tensor loss;
//   { CudaAutocast autocast(true); loss = model->Loss(model->forward(x), y); }
//   scaler.Scale(loss).backward();
//   const bool finite = scaler.UnscaleGradients(optimizer);
//   if (finite) optimizer.step();
//   optimizer.zero_grad();
//   scaler.Update(finite);

#include <torch/optim/optimizer.h>

#include <cstdint>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace cohort::runtime {

class CudaAutocast {
 public:
  // enabled false: does nothing.
  explicit CudaAutocast(bool enabled);
  ~CudaAutocast();
  CudaAutocast(const CudaAutocast&) = delete;
  CudaAutocast& operator=(const CudaAutocast&) = delete;

 private:
  bool enabled_;
  bool was_enabled_ = false;
};

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16, PyTorch's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // finite steps in a row before the scale grows
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  torch::Tensor Scale(const torch::Tensor& loss) const;
  // Divides each defined gradient of `optimizer`'s parameters by scale(); true when every one is
  // finite. CUDA gradients take LibTorch's fused AMP kernel, others a per-tensor check.
  bool UnscaleGradients(torch::optim::Optimizer& optimizer) const;
  // After each optimizer step (taken when `finite`, skipped otherwise).
  void Update(bool finite);

  // {"scale": S, "growth_tracker": N}: what a checkpoint keeps (skipped_steps is this run's).
  nlohmann::json ToJson() const;
  // Takes a checkpoint's state; InvalidArgument naming the field when it is missing, not a
  // finite positive scale, or a count outside [0, growth_interval). Unchanged on error.
  absl::Status FromJson(const nlohmann::json& state);

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }

 private:
  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;  // finite steps since the last change of the scale
  int64_t skipped_ = 0;
};

}  // namespace cohort::runtime
