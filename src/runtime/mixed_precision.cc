#include "runtime/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cohort::runtime {
namespace {

// LibTorch 2.4 replaced the CUDA-only autocast calls with ones taking the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool CudaAutocastEnabled() { return at::autocast::is_autocast_enabled(at::kCUDA); }
void SetCudaAutocast(bool on) {
  at::autocast::set_autocast_enabled(at::kCUDA, on);
  if (on) at::autocast::set_autocast_dtype(at::kCUDA, at::kHalf);
}
#else
bool CudaAutocastEnabled() { return at::autocast::is_enabled(); }
void SetCudaAutocast(bool on) {
  at::autocast::set_enabled(on);
  if (on) at::autocast::set_autocast_gpu_dtype(at::kHalf);
}
#endif

}  // namespace

CudaAutocast::CudaAutocast(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  was_enabled_ = CudaAutocastEnabled();
  SetCudaAutocast(true);
  at::autocast::increment_nesting();
}

CudaAutocast::~CudaAutocast() {
  if (!enabled_) return;
  // The outermost scope frees the fp16 copies of the weights autocast cached for this pass.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetCudaAutocast(was_enabled_);
}

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {}

torch::Tensor GradScaler::Scale(const torch::Tensor& loss) const { return loss * scale_; }

bool GradScaler::UnscaleGradients(torch::optim::Optimizer& optimizer) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> cuda;
  bool finite = true;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      torch::Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (grad.is_cuda()) {
        cuda.push_back(grad);
        continue;
      }
      grad.mul_(1.0 / scale_);
      finite = finite && torch::isfinite(grad).all().item<bool>();
    }
  }
  if (!cuda.empty()) {
    // One kernel over all of them; found_inf becomes 1 if any element is inf or NaN.
    torch::Tensor found_inf = torch::zeros({1}, cuda.front().options().dtype(torch::kFloat32));
    torch::Tensor inv_scale = torch::full({1}, 1.0 / scale_, found_inf.options());
    at::_amp_foreach_non_finite_check_and_unscale_(cuda, found_inf, inv_scale);
    finite = finite && found_inf.item<float>() == 0.0f;
  }
  return finite;
}

void GradScaler::Update(bool finite) {
  if (!finite) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
    return;
  }
  if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
}

nlohmann::json GradScaler::ToJson() const {
  return {{"scale", scale_}, {"growth_tracker", growth_tracker_}};
}

absl::Status GradScaler::FromJson(const nlohmann::json& state) {
  const auto scale = state.is_object() ? state.find("scale") : state.end();
  if (scale == state.end() || !scale->is_number() || !std::isfinite(scale->get<double>()) ||
      scale->get<double>() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("grad_scaler.scale: expected a finite positive number, got ",
                     scale == state.end() ? "nothing" : scale->dump()));
  }
  const auto tracker = state.find("growth_tracker");
  if (tracker == state.end() || !tracker->is_number_integer() || tracker->get<int64_t>() < 0 ||
      tracker->get<int64_t>() >= options_.growth_interval) {
    return absl::InvalidArgumentError(absl::StrCat(
        "grad_scaler.growth_tracker: expected an integer in [0, ", options_.growth_interval,
        "), got ", tracker == state.end() ? "nothing" : tracker->dump()));
  }
  scale_ = scale->get<double>();
  growth_tracker_ = tracker->get<int64_t>();
  return absl::OkStatus();
}

}  // namespace cohort::runtime
