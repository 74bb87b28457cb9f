#pragma once
// GradientReducer: synchronous data parallelism for one model replica (docs/architecture.md §5).
// After every backward pass the gradients of all workers are summed and averaged, so each
// worker applies the identical update and N workers on b samples each train like one worker on
// N*b samples.
//
// How: the gradients live in fusion buckets (flat fp32 tensors; each parameter's .grad is a view
// into its bucket, so autograd accumulates straight into it). A hook on each parameter's
// gradient accumulator counts it ready as soon as autograd has produced it; when all of a
// bucket's gradients are ready the bucket goes to a communication thread (CommWorker) at once,
// so deeper layers' gradients travel while shallower layers are still being differentiated.
// Buckets are reduced in the same order on every rank. Synchronize() sends what is left (a
// parameter that got no gradient counts as zeros), waits for what is in flight, and returns.
//
// On GPUs the buckets are GPU memory and the communicator is NCCL (comm->device_buffers()):
// each bucket's collective waits, on the device, for the backward pass's kernels that filled it
// (an event on the default stream: Communicator::FollowComputeStream) and runs on NCCL's own
// stream, so the reduction overlaps the rest of the backward pass as on the CPU; fp16
// compression converts on the device. Synchronize returns once every bucket is reduced, so the
// optimizer's kernels, issued after it on the default stream, read reduced gradients.
//
// Options mirror Determined's `optimizations`: tensor_fusion_threshold, aggregation_frequency,
// average_aggregated_gradients, gradient_compression (fp16 on the wire, vectorized conversion
// and reduction), auto_tune_tensor_fusion. The bucket layout is rebuilt once, after the first
// step, from the order in which gradients actually became ready on rank 0.
//
// A group of one rank that steps every batch (aggregation_frequency 1) has nothing to exchange
// or accumulate: the reducer then makes no buckets and registers no hooks, and Synchronize only
// counts the step. Gradients stay where autograd puts them (in a bucket view autograd must add
// into the view instead of handing its result over: the bench's mlp's backward pass took 134 ms
// with bucket views and 94 ms without), and parameters may live on any device. With
// error_on_unused_parameters the hooks stay, to report unused parameters.
//
// Thread-safety: one training thread calls Synchronize and runs backward (the hooks run on the
// thread that runs backward). The communicator belongs to the reducer's communication thread
// from the first backward of an aggregation cycle until Synchronize returns; outside those
// windows the training thread may use it (metrics, object collectives).
//
// Example:
//   COHORT_RETURN_IF_ERROR(BroadcastModule(*model, *comm, /*root=*/0));
//   COHORT_ASSIGN_OR_RETURN(auto reducer, GradientReducer::Create(*model, comm.get(), {}));
//   for (...) {
//     torch::Tensor loss = torch::nll_loss(model->forward(x), y);
//     loss.backward();
//     COHORT_ASSIGN_OR_RETURN(bool step, reducer->Synchronize());
//     if (step) { optimizer.step(); optimizer.zero_grad(); }
//   }

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/comm/communicator.h"
#include "runtime/step_profiler.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace cohort::runtime {

struct GradientReducerOptions {
  // optimizations.tensor_fusion_threshold: bucket size limit in MB (2^20 bytes). 0: one bucket
  // per parameter.
  double fusion_threshold_mb = 64;
  // Limit of the first bucket (the last layers' gradients), small so communication starts early.
  double first_bucket_mb = 1;
  // optimizations.aggregation_frequency: local backward passes per exchange and optimizer step.
  int aggregation_frequency = 1;
  // optimizations.average_aggregated_gradients: divide the accumulated sum by
  // aggregation_frequency (so k passes on b samples act like one pass on k*b samples).
  bool average_aggregated_gradients = true;
  // Send a bucket as soon as its gradients are ready (true), or all buckets from
  // Synchronize(), after the backward pass (false: no overlap, but no competition for cores
  // between communication and computation either; auto_tune may choose it). With auto_tune,
  // the first step uses this and the tuner's choice replaces it.
  bool overlap = true;
  // optimizations.gradient_compression: fp16 on the wire.
  bool compression = false;
  // optimizations.auto_tune_tensor_fusion: try fusion thresholds during the first steps.
  bool auto_tune = false;
  std::vector<double> auto_tune_candidates_mb = {0.5, 2, 8, 32};
  // ... and also the largest candidate with `overlap` false.
  bool auto_tune_overlap = true;
  // Rebuild the layout once from the observed ready order (DDP does the same).
  bool rebuild_from_ready_order = true;
  // A parameter that received no gradient in a step: false counts it as zeros (its replicas
  // still receive the average of the others); true fails the step naming the parameter.
  bool error_on_unused_parameters = false;
  // Upper bound for Synchronize's wait on the communication thread (the communicator's own
  // deadline normally fires first).
  absl::Duration timeout = absl::Minutes(10);
};

class GradientReducer {
 public:
  // Registers gradient hooks on every parameter of `module` that requires a gradient and gives
  // each a .grad view into its bucket (existing .grad values are kept). Parameters must be
  // dense fp32 or fp64 tensors where `comm` reduces: host memory, or the GPU for a device
  // communicator (comm->device_buffers(), NCCL; its buckets are then GPU memory and fp16
  // compression converts there) — InvalidArgument naming the parameter otherwise. fp16
  // compression applies to fp32 buckets. `comm` must outlive the reducer. Every rank must build
  // its reducer over the same architecture.
  static absl::StatusOr<std::unique_ptr<GradientReducer>> Create(torch::nn::Module& module,
                                                                 comm::Communicator* comm,
                                                                 GradientReducerOptions options);
  ~GradientReducer();

  // Whether a reducer over `ranks` ranks with `options` exchanges or accumulates gradients at
  // all: false for one rank stepping every batch (the reducer then only counts steps, and its
  // communicator is never used).
  static bool MovesGradients(int ranks, const GradientReducerOptions& options);

  // Call once after each backward pass. Returns false for the first aggregation_frequency - 1
  // passes of a cycle (the gradients accumulate locally: do not step or zero them), true when
  // every .grad holds the average over workers (and passes): step the optimizer, then zero the
  // gradients. Errors name the rank, the bucket and a parameter in it; after an error the
  // reducer is broken and returns it again.
  absl::StatusOr<bool> Synchronize();

  // Profiling: while on, the communication thread records each bucket's allreduce (start, end,
  // bytes on the wire), kept until TakeBucketTimings. Off by default: nothing is measured.
  // Call both from the training thread between Synchronize and the next backward pass.
  void set_record_bucket_timings(bool on);
  std::vector<BucketTiming> TakeBucketTimings();

  // Current layout: parameter names per bucket, in reduction order.
  std::vector<std::vector<std::string>> BucketNames() const;
  double fusion_threshold_mb() const;
  // Steps (optimizer steps) completed.
  int64_t steps() const;

 private:
  class Impl;
  explicit GradientReducer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Copies every parameter and buffer of `module` on rank `root` into the same tensors on every
// other rank (one Broadcast per dtype), so all replicas start identical. Every rank must call it
// with the same architecture; a mismatch in sizes is reported as an error, not undefined.
absl::Status BroadcastModule(torch::nn::Module& module, comm::Communicator& comm, int root);

}  // namespace cohort::runtime
