#include "cohort/optim/lr_warmup.h"

#include <torch/optim/optimizer.h>

#include <algorithm>

namespace cohort::runtime::optim {

LinearWarmup::LinearWarmup(torch::optim::Optimizer& optimizer, double base_lr, int slots,
                           int64_t warmup_steps)
    : torch::optim::LRScheduler(optimizer),
      optimizer_(optimizer),
      base_lr_(base_lr),
      target_lr_(base_lr * std::max(1, slots)),
      warmup_steps_(std::max<int64_t>(0, warmup_steps)) {
  for (auto& group : optimizer_.param_groups()) group.options().set_lr(RateAt(0));
}

double LinearWarmup::RateAt(int64_t steps) const {
  if (warmup_steps_ == 0 || steps >= warmup_steps_) return target_lr_;
  return base_lr_ + (target_lr_ - base_lr_) * static_cast<double>(steps) / warmup_steps_;
}

std::vector<double> LinearWarmup::get_lrs() {
  // LRScheduler::step() asks before counting the step it is taking.
  return std::vector<double>(optimizer_.param_groups().size(), RateAt(step_count_ + 1));
}

}  // namespace cohort::runtime::optim
