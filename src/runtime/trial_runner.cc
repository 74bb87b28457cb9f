#include "runtime/trial_runner.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cohort/optim/fused_sgd.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "common/logging.h"
#include "common/small_file.h"
#include "common/split_mix64.h"
#include "runtime/device_wait.h"
#include "runtime/distributed_sampler.h"
#include "runtime/metrics.h"
#include "runtime/mixed_precision.h"
#include "runtime/step_profiler.h"

namespace cohort::runtime {
namespace {

namespace fs = std::filesystem;

// A checkpoint's state.json (a few counts and the trial's user state) is read at most this big.
constexpr size_t kMaxStateJsonBytes = 16u << 20;

// The seed of batch b on `rank`: one SplitMix64 step of (seed, rank, b) mixed together.
uint64_t BatchSeed(uint64_t seed, int rank, int64_t b) {
  auto step = [](uint64_t x) { return Mix64(x + SplitMix64::kGamma); };
  return step(seed ^ step(static_cast<uint64_t>(rank) << 32 ^ static_cast<uint64_t>(b)));
}

StepProfilerOptions ProfilerOptions(const TrialRunOptions& options, int rank) {
  StepProfilerOptions p = options.profiling;
  p.rank = rank;
  return p;
}

Batch Select(const TensorDataset& data, const std::vector<int64_t>& indices) {
  torch::Tensor idx = torch::tensor(indices, torch::kInt64);
  return {data.inputs.index_select(0, idx), data.targets.index_select(0, idx)};
}

class Runner {
 public:
  Runner(Trial& trial, const TrialRunOptions& options, core::Context& core)
      : trial_(trial),
        options_(options),
        core_(core),
        comm_(core.distributed().communicator()),
        device_(options.gpu ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU)),
        ctx_(core, options.global_batch_size, options.seed, options.hparams, options.data, device_),
        profiler_(ProfilerOptions(options, comm_.rank())) {}

  absl::StatusOr<TrialRunResult> Run() {
    COHORT_ASSIGN_OR_RETURN(const int64_t start, Setup());
    result_.batches_completed = start;
    if (options_.perform_initial_validation && start == 0) COHORT_RETURN_IF_ERROR(Validate(0));
    for (int64_t b = start; b < options_.max_batches; ++b) {
      profiler_.Begin(b, absl::Now());
      reducer_->set_record_bucket_timings(profiler_.active());
      COHORT_ASSIGN_OR_RETURN(const bool step, TrainOneBatch(b));
      const int64_t done = b + 1;
      result_.batches_completed = done;
      const bool last = done == options_.max_batches;
      COHORT_RETURN_IF_ERROR(AfterBatch(done, last));
      profiler_.End();
      // Between optimizer steps only: a checkpoint cannot hold half-aggregated gradients.
      if (!last && step) {
        COHORT_ASSIGN_OR_RETURN(bool preempt, core_.preempt().ShouldPreempt());
        if (preempt) return Preempted(done);
      }
    }
    if (start >= options_.max_batches) COHORT_RETURN_IF_ERROR(Validate(start));
    if (core_.reporter() != nullptr) {
      COHORT_RETURN_IF_ERROR(core_.reporter()->ReportCompleted(
          SearcherMetric(), options_.final_operation_length > 0
                                ? options_.final_operation_length
                                : static_cast<double>(options_.max_batches)));
    }
    return result_;
  }

 private:
  // Builds the model, optimizer, data and reducer, restores a checkpoint if asked, and
  // broadcasts rank 0's weights. Returns the batch to start from.
  absl::StatusOr<int64_t> Setup() {
    COHORT_RETURN_IF_ERROR(CheckOptions());
    // Model initialization is seeded alike everywhere; rank 0's weights are broadcast anyway.
    torch::manual_seed(options_.seed);
    model_ = trial_.BuildModel(ctx_);
    if (model_ == nullptr) return Error("BuildModel returned no model");
    model_->to(device_);  // before the optimizer takes its parameters
    optimizer_ = trial_.BuildOptimizer(ctx_, *model_);
    if (optimizer_ == nullptr) return Error("BuildOptimizer returned no optimizer");
    scheduler_ = trial_.BuildLRScheduler(ctx_, *optimizer_);
    COHORT_ASSIGN_OR_RETURN(train_, trial_.BuildTrainingData(ctx_));
    COHORT_ASSIGN_OR_RETURN(validation_, trial_.BuildValidationData(ctx_));
    COHORT_ASSIGN_OR_RETURN(
        DistributedSampler sampler,
        DistributedSampler::Create({.dataset_size = train_.size(),
                                    .per_slot_batch = ctx_.per_slot_batch_size(),
                                    .rank = comm_.rank(),
                                    .size = comm_.size(),
                                    .seed = options_.seed}));
    sampler_.emplace(std::move(sampler));
    // Before a restore, which gives it the checkpoint's loss scale.
    if (options_.mixed_precision && device_.is_cuda()) scaler_.emplace();
    int64_t start = 0;
    if (!options_.restore_from.empty()) {
      COHORT_ASSIGN_OR_RETURN(start, Restore(options_.restore_from));
    } else if (!options_.warm_start_from.empty()) {
      COHORT_RETURN_IF_ERROR(WarmStart(options_.warm_start_from));
    }
    COHORT_ASSIGN_OR_RETURN(comm::Communicator * weights, WeightsCommunicator());
    COHORT_RETURN_IF_ERROR(BroadcastModule(*model_, *weights, 0));
    COHORT_ASSIGN_OR_RETURN(reducer_,
                            GradientReducer::Create(*model_, weights, options_.optimizations));
    return start;
  }

  // The communicator of the model's weights and gradients: the world's (host memory), unless
  // they are on a GPU and move between ranks; then the device communicator (NCCL), formed here.
  absl::StatusOr<comm::Communicator*> WeightsCommunicator() {
    if (!device_.is_cuda() ||
        !GradientReducer::MovesGradients(comm_.size(), options_.optimizations)) {
      return &comm_;
    }
    absl::StatusOr<comm::Communicator*> device = core_.distributed().DeviceCommunicator();
    if (!device.ok()) {
      return Annotate(device.status(),
                      absl::StrCat("rank ", comm_.rank(), ": the GPU slots' communicator"));
    }
    return device;
  }

  // Forward, backward, gradient exchange and (when the aggregation cycle completes) the
  // optimizer step for batch `b`, timed into the report window. Returns whether it stepped.
  absl::StatusOr<bool> TrainOneBatch(int64_t b) {
    // Dropout and other randomness: a pure function of (seed, rank, batch), so a resumed run
    // draws what an uninterrupted one would have.
    torch::manual_seed(BatchSeed(options_.seed, comm_.rank(), b));
    const absl::Time step_start = absl::Now();
    // The report window's clock runs during batches only: validation and checkpoints between
    // windows do not count against samples_per_second.
    if (in_window_ == 0) window_start_ = step_start;
    absl::Time t = step_start;
    Batch batch = Select(train_, sampler_->Batch(b));
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("dataloader_next", t));
    batch = ToDevice(std::move(batch));  // CPU: nothing moves
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("to_device", t));
    const absl::Time train_start = t;
    model_->train();
    TrainResult result;
    {
      CudaAutocast autocast(scaler_.has_value());  // mixed precision: the forward pass only
      result = trial_.TrainBatch(ctx_, *model_, batch);
    }
    if (!result.loss.defined()) return Error("TrainBatch returned no loss");
    if (result.loss.numel() != 1) {
      return Error(absl::StrCat("TrainBatch returned a loss of ", result.loss.numel(),
                                " elements; return one number (reduce it, e.g. with .mean())"));
    }
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("forward", t));
    // Gradients travel from here, overlapping the rest of backward.
    (scaler_ ? scaler_->Scale(result.loss) : result.loss).backward();
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("backward", t));
    COHORT_ASSIGN_OR_RETURN(bool step, reducer_->Synchronize());
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("gradient_wait", t));
    if (profiler_.active()) profiler_.Buckets(reducer_->TakeBucketTimings());
    if (step) OptimizerStep(b);
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("optimizer_step", t));
    Record("train_batch", train_start, t);
    if (step && scheduler_ != nullptr) {
      scheduler_->step();
      ++scheduler_steps_;
    }
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("step_lr_schedulers", t));
    AddLoss(result.loss);
    for (const auto& [name, value] : result.metrics) sums_[name] += value;
    COHORT_ASSIGN_OR_RETURN(t, EndPhase("from_device", t));
    profiler_.Phase("step", step_start, t);
    ++in_window_;
    return step;
  }

  // The optimizer's step and the gradients zeroed; with mixed precision the gradients are
  // unscaled first, and a step whose gradients overflowed is skipped (the scale then halves).
  void OptimizerStep(int64_t b) {
    if (!scaler_) {
      optim::StepAndZeroGrad(*optimizer_);
      return;
    }
    const bool finite = scaler_->UnscaleGradients(*optimizer_);
    if (finite) {
      optim::StepAndZeroGrad(*optimizer_);
    } else {
      optimizer_->zero_grad();
    }
    scaler_->Update(finite);
    if (!finite && comm_.rank() == 0 && scaler_->skipped_steps() <= 10) {
      COHORT_LOG(INFO) << "mixed precision: batch " << b + 1
                       << ": inf/NaN gradients, step skipped; loss scale now " << scaler_->scale()
                       << (scaler_->skipped_steps() == 10 ? " (further skips not logged)" : "");
    }
  }

  // A GPU slot needs a LibTorch that sees CUDA (and, for more than one slot, a build with NCCL:
  // WeightsCommunicator says so).
  absl::Status CheckDevice() const {
    if (!device_.is_cuda()) return absl::OkStatus();
    const std::string where =
        absl::StrCat("rank ", comm_.rank(), ": this worker's slot is a GPU (COHORT_GPU_SLOT=1, ",
                     "CUDA_VISIBLE_DEVICES=", options_.gpu.value_or(""), ")");
    if (!torch::cuda::is_available()) {
      return absl::FailedPreconditionError(
          absl::StrCat(where,
                       " but this LibTorch sees no CUDA device: build the trial against a CUDA "
                       "LibTorch (cmake -DCOHORT_CUDA=ON, docs/design/0013-gpus.md) or give it CPU "
                       "slots (cohort-launch without --gpus; cohort-agent --slots N)"));
    }
    return absl::OkStatus();
  }

  // Tensor::to returns the tensor itself when it is there already (the CPU's case).
  Batch ToDevice(Batch batch) const { return {ToDevice(batch.inputs), ToDevice(batch.targets)}; }

  // To a GPU a host tensor goes through pinned memory, copied asynchronously on the compute
  // stream: a copy from pageable memory first waits for the device to finish everything queued
  // (the previous batch), so the host could not select and send the next batch while the
  // device computes. LibTorch's pinned-memory cache keeps the buffer until the copy is done.
  torch::Tensor ToDevice(const torch::Tensor& t) const {
    if (!device_.is_cuda() || !t.defined() || !t.is_cpu()) return t.to(device_);
    const torch::Tensor pinned = t.is_pinned() ? t : t.pin_memory();
    return pinned.to(torch::TensorOptions().device(device_), /*non_blocking=*/true);
  }

  // Ends the phase that began at `start` now: adds it to the report window's timings and the
  // step profile and returns its end, the next phase's start. On a GPU the host runs ahead of
  // the device, so a phase would be timed as the launches of its kernels: while the profiler
  // records this batch (with profiling.sync_timings), it first waits for the device, so each
  // phase gets its own time, as Determined's profiler does. That wait running out is the error.
  absl::StatusOr<absl::Time> EndPhase(absl::string_view phase, absl::Time start) {
    if (options_.sync_timings && device_.is_cuda() && profiler_.active()) {
      COHORT_RETURN_IF_ERROR(WaitForCompute(absl::StrCat("the batch's ", phase, " kernels")));
    }
    const absl::Time end = absl::Now();
    Record(phase, start, end);
    return end;
  }

  // Adds the phase [start, end) to the report window's timings and the step profile.
  void Record(absl::string_view phase, absl::Time start, absl::Time end) {
    timings_[std::string(phase)] += absl::ToDoubleMilliseconds(end - start);
    profiler_.Phase(phase, start, end);
  }

  // Waits for the kernels issued so far on this thread's stream (LibTorch's default, where the
  // trial computes), with the collectives' deadline. Not the whole device: the gradient
  // reducer's NCCL stream, still reducing during the backward phase, would be timed as backward.
  // DeadlineExceeded, as WaitForDevice's, with this rank and the setting to raise.
  absl::Status WaitForCompute(absl::string_view what) {
    const absl::Status done = WaitForDevice(device_, comm_.topology().collective_timeout, what);
    if (done.ok()) return done;
    return absl::Status(done.code(),
                        absl::StrCat("rank ", comm_.rank(), ": trial: ", done.message(),
                                     "; if the work is only slow, raise "
                                     "COHORT_COLLECTIVE_TIMEOUT (seconds)"));
  }

  // The batch's loss joins the report window's sum where it was computed: on a GPU, reading
  // it back each batch would make the host wait for the device once a batch.
  void AddLoss(const torch::Tensor& loss) {
    if (!loss_sum_.defined()) {
      loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
    }
    loss_sum_.add_(loss.detach().reshape({}).to(torch::kFloat64));
  }

  // The report window's summed loss, read back (its kernels awaited with a deadline first).
  absl::StatusOr<double> TakeLossSum() {
    if (!loss_sum_.defined()) return 0.0;
    COHORT_RETURN_IF_ERROR(WaitForCompute("the training window's losses"));
    const double sum = loss_sum_.item<double>();
    loss_sum_.zero_();
    return sum;
  }

  // What follows `done` batches: progress, the training report window, validation, searcher
  // operations that end here, and checkpoints.
  absl::Status AfterBatch(int64_t done, bool last) {
    if (core_.reporter() != nullptr) {
      COHORT_RETURN_IF_ERROR(
          core_.reporter()->ReportProgress({.completed = static_cast<double>(done),
                                            .total = static_cast<double>(options_.max_batches),
                                            .unit = "batches"}));
    }
    if (done % options_.scheduling_unit == 0 || last) COHORT_RETURN_IF_ERROR(CloseWindow(done));
    if ((options_.validation_period > 0 && done % options_.validation_period == 0) || last) {
      COHORT_RETURN_IF_ERROR(Validate(done));
    }
    for (const TrialRunOptions::Operation& op : options_.searcher_operations) {
      if (op.end_batches != done || last) continue;
      if (last_validation_batches_ != done) COHORT_RETURN_IF_ERROR(Validate(done));
      if (core_.reporter() != nullptr) {
        COHORT_RETURN_IF_ERROR(core_.reporter()->ReportCompleted(SearcherMetric(), op.length));
      }
    }
    if ((options_.checkpoint_period > 0 && done % options_.checkpoint_period == 0) || last ||
        PolicyCheckpoints(done)) {
      COHORT_RETURN_IF_ERROR(Checkpoint(done));
    }
    return absl::OkStatus();
  }

  // Whether checkpoint_policy asks for a checkpoint after `done` batches: only right after a
  // validation. Every rank decides the same (the metrics are reduced across ranks).
  bool PolicyCheckpoints(int64_t done) const {
    if (last_validation_batches_ != done) return false;
    switch (options_.checkpoint_policy) {
      case CheckpointPolicy::kAll:
        return true;
      case CheckpointPolicy::kNone:
        return false;
      case CheckpointPolicy::kBest:
        return best_validation_batches_ == done;
    }
    return false;
  }

  // Records whether the validation after `done` batches is the best of this run so far.
  void TrackBest(int64_t done) {
    const double metric = SearcherMetric();
    if (std::isnan(metric)) return;
    if (!best_metric_ ||
        (options_.smaller_is_better ? metric < *best_metric_ : metric > *best_metric_)) {
      best_metric_ = metric;
      best_validation_batches_ = done;
    }
  }

  // Reports the window's training metrics and timings, prints the progress line (rank 0) and
  // starts a new window.
  absl::Status CloseWindow(int64_t done) {
    // First, so that on a GPU the window's time includes the work still queued on the device.
    COHORT_ASSIGN_OR_RETURN(sums_["loss"], TakeLossSum());
    const double seconds = absl::ToDoubleSeconds(absl::Now() - window_start_);
    const double rate = in_window_ * options_.global_batch_size / std::max(seconds, 1e-9);
    sums_["samples_per_second"] = rate * in_window_;  // a sum, as ReportTraining takes means
    COHORT_RETURN_IF_ERROR(ReportTraining(done, sums_, timings_, in_window_, absl::Now()));
    if (comm_.rank() == 0) {
      const double eta = (options_.max_batches - done) * seconds / in_window_;
      std::fprintf(stderr, "[batch %lld/%lld] loss %.4f  %.0f samples/s  ETA %d:%02d\n",
                   static_cast<long long>(done), static_cast<long long>(options_.max_batches),
                   sums_["loss"] / in_window_, rate, static_cast<int>(eta) / 60,
                   static_cast<int>(eta) % 60);
    }
    sums_.clear();
    timings_.clear();
    in_window_ = 0;
    return absl::OkStatus();
  }

  absl::StatusOr<TrialRunResult> Preempted(int64_t done) {
    if (last_checkpoint_batches_ != done) COHORT_RETURN_IF_ERROR(Checkpoint(done));
    result_.preempted = true;
    if (core_.reporter() != nullptr) {
      COHORT_LOG(INFO) << "preempted after " << done << " of " << options_.max_batches
                       << " batches; checkpoint " << result_.latest_checkpoint
                       << " resumes the run";
    }
    return result_;
  }

  // The searcher's metric from the last validation: `searcher_metric`, or the same name
  // without its "validation_" prefix; NaN (with a warning) when the trial reports neither.
  double SearcherMetric() const {
    const nlohmann::json& m = result_.validation_metrics;
    if (!m.is_object() || m.empty()) return std::nan("");
    std::string name = options_.searcher_metric;
    if (name.empty()) name = m.begin().key();
    for (const std::string& candidate :
         {name, name.rfind("validation_", 0) == 0 ? name.substr(11) : name}) {
      if (m.contains(candidate) && m[candidate].is_number()) return m[candidate].get<double>();
    }
    COHORT_LOG(WARNING) << "searcher.metric '" << name << "' is not among the validation metrics "
                        << m.dump() << ": the searcher gets NaN";
    return std::nan("");
  }

  absl::Status Error(absl::string_view what) const {
    return absl::FailedPreconditionError(absl::StrCat("rank ", comm_.rank(), ": trial: ", what));
  }

  absl::Status CheckOptions() {
    const int64_t slots = comm_.size();
    COHORT_RETURN_IF_ERROR(CheckDevice());
    if (options_.global_batch_size < slots) {
      return absl::InvalidArgumentError(absl::StrCat(
          "global_batch_size ", options_.global_batch_size, " is smaller than the ", slots,
          " slots of this trial: every slot needs at least one sample per batch"));
    }
    if (options_.global_batch_size % slots != 0 && comm_.rank() == 0) {
      COHORT_LOG(WARNING) << "global_batch_size " << options_.global_batch_size
                          << " is not a multiple of " << slots << " slots: each slot trains on "
                          << options_.global_batch_size / slots << " samples per batch and "
                          << options_.global_batch_size % slots << " are dropped";
    }
    if (options_.max_batches < 0 || options_.validation_period < 0 ||
        options_.checkpoint_period < 0 || options_.scheduling_unit < 1) {
      return absl::InvalidArgumentError(
          "max_batches and the periods must be >= 0, scheduling_unit >= 1");
    }
    return absl::OkStatus();
  }

  absl::Status ReportTraining(int64_t done, const std::map<std::string, double>& sums,
                              std::map<std::string, double> timings, int64_t batches,
                              absl::Time reduce_start) {
    std::map<std::string, double> means;
    for (const auto& [name, sum] : sums) means[name] = sum / static_cast<double>(batches);
    if (options_.average_training_metrics) {
      COHORT_ASSIGN_OR_RETURN(means, AverageMetrics(comm_, means));
    }
    const absl::Time reduced = absl::Now();
    timings["reduce_metrics"] = absl::ToDoubleMilliseconds(reduced - reduce_start);
    profiler_.Phase("reduce_metrics", reduce_start, reduced);
    nlohmann::json metrics = means;
    nlohmann::json per_batch;
    for (const auto& [name, total] : timings) {
      per_batch[name] = name == "reduce_metrics" ? total : total / static_cast<double>(batches);
    }
    metrics["timings"] = per_batch;
    if (core_.reporter() == nullptr) return absl::OkStatus();
    return core_.train().ReportTrainingMetrics(done, metrics);
  }

  absl::Status Validate(int64_t done) {
    const absl::Time start = absl::Now();
    COHORT_RETURN_IF_ERROR(ValidateAll(done));
    profiler_.Phase("validation", start, absl::Now());
    return absl::OkStatus();
  }

  absl::Status ValidateAll(int64_t done) {
    last_validation_batches_ = done;
    torch::NoGradGuard no_grad;
    model_->eval();
    const int64_t n = validation_.size();
    std::vector<int64_t> mine;
    for (int64_t i = comm_.rank(); i < n; i += comm_.size()) mine.push_back(i);
    std::map<std::string, double> sums;
    double count = 0;
    const int64_t per_batch = ctx_.per_slot_batch_size();
    for (size_t at = 0; at < mine.size(); at += static_cast<size_t>(per_batch)) {
      std::vector<int64_t> indices(mine.begin() + at,
                                   mine.begin() + std::min(mine.size(), at + per_batch));
      Batch batch = ToDevice(Select(validation_, indices));
      for (const auto& [name, value] : Evaluate(batch)) {
        sums[name] += value * static_cast<double>(indices.size());
      }
      count += static_cast<double>(indices.size());
    }
    // Ranks without samples still take part, with weight 0 and the same metric names.
    if (count == 0) {
      if (n == 0) return Error("the validation dataset is empty");
      Batch probe = ToDevice(Select(validation_, {0}));
      for (const auto& [name, value] : Evaluate(probe)) sums[name] = 0;
    }
    std::map<std::string, double> local;
    for (const auto& [name, sum] : sums) local[name] = count > 0 ? sum / count : 0;
    COHORT_ASSIGN_OR_RETURN(auto reduced, WeightedAverageMetrics(comm_, local, count));
    result_.validation_metrics = reduced;
    if (options_.checkpoint_policy == CheckpointPolicy::kBest) TrackBest(done);
    if (core_.reporter() != nullptr) {
      COHORT_RETURN_IF_ERROR(core_.train().ReportValidationMetrics(done, reduced));
      std::string line = absl::StrCat("validation after ", done, " batches:");
      for (const auto& [name, value] : reduced) absl::StrAppend(&line, " ", name, "=", value);
      COHORT_LOG(INFO) << line;
    }
    return absl::OkStatus();
  }

  // EvaluateBatch, under autocast with mixed precision (as Determined's use_amp evaluates).
  std::map<std::string, double> Evaluate(const Batch& batch) {
    CudaAutocast autocast(scaler_.has_value());
    return trial_.EvaluateBatch(ctx_, *model_, batch);
  }

  absl::Status Checkpoint(int64_t done) {
    const absl::Time start = absl::Now();
    std::string id;
    if (comm_.rank() == 0) {
      COHORT_ASSIGN_OR_RETURN(std::string stored, WriteCheckpoint(done));
      id = stored;
    }
    // Everyone learns the id, and nobody goes on (or exits) before the checkpoint exists.
    COHORT_ASSIGN_OR_RETURN(nlohmann::json agreed, core_.distributed().BroadcastJson(id));
    result_.latest_checkpoint = agreed.get<std::string>();
    last_checkpoint_batches_ = done;
    profiler_.Phase("checkpoint", start, absl::Now());
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> WriteCheckpoint(int64_t done) {
    COHORT_ASSIGN_OR_RETURN(core::CheckpointContext::Writer writer,
                            core_.checkpoint().StorePath({{"steps_completed", done}}));
    const fs::path dir(writer.path());
    torch::serialize::OutputArchive model_archive;
    model_->save(model_archive);
    model_archive.save_to((dir / "model.pt").string());
    torch::serialize::OutputArchive optimizer_archive;
    optimizer_->save(optimizer_archive);
    optimizer_archive.save_to((dir / "optimizer.pt").string());
    nlohmann::json fields = {{"batches", done},
                             {"seed", options_.seed},
                             {"global_batch_size", options_.global_batch_size},
                             {"ranks", comm_.size()},
                             {"lr_scheduler_steps", scheduler_steps_}};
    if (scaler_) fields["grad_scaler"] = scaler_->ToJson();
    std::ofstream state(dir / "state.json");
    state << fields.dump(2);
    state.close();
    if (!state) return Error(absl::StrCat("checkpoint: writing ", (dir / "state.json").string()));
    COHORT_ASSIGN_OR_RETURN(std::string id, writer.Commit());
    result_.latest_checkpoint_path = (fs::path(core_.checkpoint().storage_dir()) / id).string();
    return id;
  }

  // Loads the model's weights only (every rank reads the same file): a new run from another
  // trial's weights.
  absl::Status WarmStart(const std::string& dir) {
    const fs::path model = fs::path(dir) / "model.pt";
    if (!fs::exists(model)) {
      return Error(absl::StrCat("warm start: ", model.string(),
                                " does not exist (is the source checkpoint's storage shared "
                                "with this machine?)"));
    }
    torch::serialize::InputArchive archive;
    archive.load_from(model.string(), device_);
    model_->load(archive);
    if (comm_.rank() == 0) {
      COHORT_LOG(INFO) << "warm start: the model's weights from " << dir;
    }
    return absl::OkStatus();
  }

  // Loads weights and optimizer state (every rank reads the same files); returns batches done.
  absl::StatusOr<int64_t> Restore(const std::string& dir) {
    // A checkpoint may come from elsewhere: its size and nesting are bounded like any outside
    // JSON's.
    absl::StatusOr<std::string> text =
        ReadSmallFile((fs::path(dir) / "state.json").string(), kMaxStateJsonBytes);
    if (!text.ok()) return Error(absl::StrCat("restore: ", text.status().message()));
    absl::StatusOr<nlohmann::json> parsed = ParseJsonBounded(*text);
    if (!parsed.ok()) {
      return Error(absl::StrCat("restore: ", dir, "/state.json: ", parsed.status().message()));
    }
    const nlohmann::json state = *std::move(parsed);
    if (!state.contains("batches")) {
      return Error(absl::StrCat("restore: ", dir, "/state.json is not a Cohort checkpoint"));
    }
    if (state.value("global_batch_size", int64_t{0}) != options_.global_batch_size) {
      return Error(absl::StrCat("restore: the checkpoint was trained with global_batch_size ",
                                state.value("global_batch_size", int64_t{0}), ", this run uses ",
                                options_.global_batch_size));
    }
    torch::serialize::InputArchive model_archive;
    model_archive.load_from((fs::path(dir) / "model.pt").string(), device_);
    model_->load(model_archive);
    torch::serialize::InputArchive optimizer_archive;
    optimizer_archive.load_from((fs::path(dir) / "optimizer.pt").string(), device_);
    optimizer_->load(optimizer_archive);
    // LibTorch's optimizer archive keeps no learning rates: replaying the scheduler's steps on
    // the initial rates restores them exactly.
    const int64_t scheduler_steps = state.value("lr_scheduler_steps", int64_t{0});
    if (scheduler_steps > 0 && scheduler_ == nullptr) {
      return Error(absl::StrCat("restore: the checkpoint's run stepped an LR scheduler ",
                                scheduler_steps, " times, but BuildLRScheduler returned none"));
    }
    for (int64_t i = 0; i < scheduler_steps; ++i) scheduler_->step();
    scheduler_steps_ = scheduler_steps;
    COHORT_RETURN_IF_ERROR(RestoreScaler(dir, state));
    last_checkpoint_batches_ = state["batches"].get<int64_t>();
    return state["batches"].get<int64_t>();
  }

  // The loss scale a mixed-precision run had reached. A checkpoint without one (fp32, or
  // written before scales were kept) starts the scaler afresh; one with a scale resumed without
  // mixed precision leaves it unused.
  absl::Status RestoreScaler(const std::string& dir, const nlohmann::json& state) {
    if (!scaler_ || !state.contains("grad_scaler")) return absl::OkStatus();
    const absl::Status restored = scaler_->FromJson(state["grad_scaler"]);
    if (!restored.ok()) {
      return Error(absl::StrCat("restore: ", dir, "/state.json: ", restored.message()));
    }
    return absl::OkStatus();
  }

  Trial& trial_;
  const TrialRunOptions& options_;
  core::Context& core_;
  comm::Communicator& comm_;
  const torch::Device device_;  // cuda:0 on a GPU slot (options.gpu), else the CPU
  TrialContext ctx_;
  std::shared_ptr<torch::nn::Module> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<torch::optim::LRScheduler> scheduler_;
  int64_t scheduler_steps_ = 0;
  int64_t last_checkpoint_batches_ = -1;
  int64_t last_validation_batches_ = -1;
  std::optional<double> best_metric_;     // the best searcher metric of this run's validations
  int64_t best_validation_batches_ = -1;  // where it was
  std::unique_ptr<GradientReducer> reducer_;
  // Mixed precision's loss scaler (optimizations.mixed_precision on a GPU slot); its presence
  // also turns on autocast for TrainBatch.
  std::optional<GradScaler> scaler_;
  torch::Tensor loss_sum_;  // the report window's losses, summed on the device (fp64)
  TensorDataset train_, validation_;
  std::optional<DistributedSampler> sampler_;  // set by Setup
  TrialRunResult result_;
  // The training report window: sums of the batch metrics and timings since it opened.
  std::map<std::string, double> sums_, timings_;
  int64_t in_window_ = 0;
  absl::Time window_start_;
  StepProfiler profiler_;  // the profiled batches' timelines (options_.profiling)
};

}  // namespace

absl::StatusOr<TrialRunResult> RunTrial(Trial& trial, const TrialRunOptions& options,
                                        core::Context& context) {
  comm::Communicator& comm = context.distributed().communicator();
  try {
    return Runner(trial, options, context).Run();
  } catch (const std::exception& e) {  // LibTorch throws c10::Error
    std::string what = e.what();
    return absl::InternalError(
        absl::StrCat("rank ", comm.rank(), ": trial: ", what.substr(0, what.find('\n'))));
  }
}

}  // namespace cohort::runtime
