#pragma once
// The Trial API (docs/architecture.md §6, Determined's PyTorchTrial for C++): a user subclasses
// Trial to say what to train; the runtime owns the loop (TrialMain, cohort/trial_main.h):
// per-slot batches from a distributed sampler, gradient synchronization, validation and
// checkpoint periods, resuming, metric reduction across workers.
//
// Example:
//   class MnistTrial : public cohort::runtime::Trial {
//     std::shared_ptr<torch::nn::Module> BuildModel(TrialContext& ctx) override { ... }
//     std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(TrialContext& ctx,
//                                                             torch::nn::Module& m) override;
//     absl::StatusOr<TensorDataset> BuildTrainingData(TrialContext& ctx) override;
//     absl::StatusOr<TensorDataset> BuildValidationData(TrialContext& ctx) override;
//     TrainResult TrainBatch(TrialContext&, torch::nn::Module& m, const Batch& b) override {
//       torch::Tensor loss = torch::nll_loss(Forward(m, b.inputs), b.targets);
//       return {loss, {}};
//     }
//     std::map<std::string, double> EvaluateBatch(...) override { return {{"loss", ...}}; }
//   };
//
// Thread-safety: a Trial's methods are called from the worker's training thread only.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/schedulers/lr_scheduler.h>
#include <torch/types.h>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "cohort/core.h"
#include "nlohmann/json.hpp"

namespace cohort::runtime {

// An in-memory dataset: row i of `inputs` goes with row i of `targets`.
struct TensorDataset {
  torch::Tensor inputs;
  torch::Tensor targets;
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

struct TrainResult {
  torch::Tensor loss;                      // the runtime calls backward on it
  // Reported with the loss (averaged across workers). The names "loss" and
  // "samples_per_second" are the runtime's own: a metric so named is replaced by its value.
  std::map<std::string, double> metrics;
};

// What a trial sees of its run. Owned by the runtime.
class TrialContext {
 public:
  TrialContext(core::Context& core, int64_t global_batch_size, uint64_t seed,
               nlohmann::json hparams, nlohmann::json data, torch::Device device = torch::kCPU)
      : core_(core),
        comm_(core.distributed().communicator()),
        global_batch_size_(global_batch_size),
        seed_(seed),
        hparams_(std::move(hparams)),
        data_(std::move(data)),
        device_(device) {}

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool is_chief() const { return comm_.rank() == 0; }
  int64_t global_batch_size() const { return global_batch_size_; }
  // global_batch_size // slots (the remainder is dropped, with a warning, by the runtime).
  int64_t per_slot_batch_size() const { return global_batch_size_ / comm_.size(); }
  uint64_t trial_seed() const { return seed_; }
  const nlohmann::json& hparams() const { return hparams_; }
  // The experiment config's free-form `data` section.
  const nlohmann::json& data() const { return data_; }
  // Between batches the trial may use the communicator for its own collectives.
  comm::Communicator& communicator() { return comm_; }
  // The Core API contexts of the run (object collectives, extra metrics, cluster info).
  core::Context& core() { return core_; }
  // Where the model and the batches are: cuda:0 on a GPU slot (cohort-launch --gpus gives each
  // worker one, as its CUDA device 0), else the CPU. A tensor the trial makes in TrainBatch or
  // EvaluateBatch belongs here too (torch::zeros(..., ctx.device())).
  torch::Device device() const { return device_; }

 private:
  core::Context& core_;
  comm::Communicator& comm_;
  int64_t global_batch_size_;
  uint64_t seed_;
  nlohmann::json hparams_;
  nlohmann::json data_;
  torch::Device device_;
};

class Trial {
 public:
  virtual ~Trial() = default;
  virtual std::shared_ptr<torch::nn::Module> BuildModel(TrialContext& ctx) = 0;
  virtual std::unique_ptr<torch::optim::Optimizer> BuildOptimizer(TrialContext& ctx,
                                                                  torch::nn::Module& model) = 0;
  // Optional: a learning-rate scheduler over `optimizer`, stepped after every optimizer step
  // (LibTorch's StepLR, optim::LinearWarmup, ...). Resuming replays its steps, so a scheduler
  // must compute its rates from its step count and the optimizer's initial rates only.
  virtual std::unique_ptr<torch::optim::LRScheduler> BuildLRScheduler(
      TrialContext& ctx, torch::optim::Optimizer& optimizer) {
    return nullptr;
  }
  virtual absl::StatusOr<TensorDataset> BuildTrainingData(TrialContext& ctx) = 0;
  virtual absl::StatusOr<TensorDataset> BuildValidationData(TrialContext& ctx) = 0;
  // Forward pass and loss on this worker's slice of one global batch. With
  // optimizations.mixed_precision on a GPU slot it runs under CUDA autocast (fp16 where safe);
  // return the loss as computed: the runtime scales it for backward.
  virtual TrainResult TrainBatch(TrialContext& ctx, torch::nn::Module& model,
                                 const Batch& batch) = 0;
  // Metrics of one validation batch, each a mean over the batch; the runtime weights them by
  // batch size across batches and workers. Under CUDA autocast too with mixed precision.
  virtual std::map<std::string, double> EvaluateBatch(TrialContext& ctx,
                                                      torch::nn::Module& model,
                                                      const Batch& batch) = 0;
};

}  // namespace cohort::runtime
