#pragma once
// LinearWarmup: Goyal et al.'s gradual warm-up ("Accurate, Large Minibatch SGD: Training
// ImageNet in 1 Hour", 2017, §2.2) for data-parallel training with N slots: the learning rate
// of every parameter group rises linearly from the base rate to N x the base rate over the first
// `warmup_steps` optimizer steps, then stays there (a later scheduler may take over). It is a
// LibTorch LRScheduler, so a Trial can return it from BuildLRScheduler and the runtime steps it
// after every optimizer step. Thread-compatible.
//
// Example:
//   LinearWarmup warmup(optimizer, /*base_lr=*/0.1, /*slots=*/8, /*warmup_steps=*/5 * epoch);
//   for (...) { ...; optimizer.step(); warmup.step(); }

#include <torch/optim/schedulers/lr_scheduler.h>

#include <cstdint>
#include <vector>

namespace cohort::runtime::optim {

class LinearWarmup : public torch::optim::LRScheduler {
 public:
  // Sets the groups' rate to base_lr at once. warmup_steps 0 starts at slots x base_lr.
  LinearWarmup(torch::optim::Optimizer& optimizer, double base_lr, int slots,
               int64_t warmup_steps);

  // Call after each optimizer step (as step()): sets the rate for the next one.
  void Step() { step(); }

  // The rate after `steps` optimizer steps.
  double RateAt(int64_t steps) const;
  int64_t steps() const { return step_count_; }

 private:
  std::vector<double> get_lrs() override;
  torch::optim::Optimizer& optimizer_;
  double base_lr_;
  double target_lr_;
  int64_t warmup_steps_;
};

}  // namespace cohort::runtime::optim
