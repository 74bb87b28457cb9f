#pragma once
// DistributedSampler: which samples each worker trains on (docs/architecture.md §6). Every epoch
// is a seeded shuffle of the dataset, the same on every rank; rank r takes the positions
// r, r + size, r + 2*size, ... of it, so the shards are disjoint and together cover the epoch.
// The tail that cannot be split evenly (fewer than `size` samples) is dropped, so every rank
// runs the same number of steps, and each rank's shard is cut into per-slot batches (a last
// partial batch is dropped too). The order is a pure function of (seed, epoch, rank): resuming
// from batch k yields exactly the batches an uninterrupted run would have seen.
//
// No LibTorch; the shuffle uses common/split_mix64.h (SplitMix64, Lemire's bounded integers) so
// the order does not depend on the standard library's distributions. Thread-safe (const).
//
// Example:
//   DistributedSampler sampler({.dataset_size = 60000, .per_slot_batch = 64,
//                               .rank = ctx.rank(), .size = ctx.size(), .seed = seed});
//   for (int64_t b = start; b < end; ++b) Train(sampler.Batch(b));  // b counts across epochs

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace cohort::runtime {

class DistributedSampler {
 public:
  struct Options {
    int64_t dataset_size = 0;
    int64_t per_slot_batch = 1;
    int rank = 0;
    int size = 1;
    uint64_t seed = 0;
    bool shuffle = true;  // false: dataset order (validation)
  };

  // InvalidArgument naming the field when sizes or ranks are out of range, or when the
  // dataset is too small for one batch per rank.
  static absl::StatusOr<DistributedSampler> Create(const Options& options);

  // Samples of this rank per epoch (a multiple of per_slot_batch).
  int64_t samples_per_rank() const { return batches_per_epoch_ * options_.per_slot_batch; }
  int64_t batches_per_epoch() const { return batches_per_epoch_; }

  // This rank's sample indices for `epoch`, in training order.
  std::vector<int64_t> EpochIndices(int64_t epoch) const;

  // This rank's `batch`-th batch, counting from the first batch of epoch 0.
  std::vector<int64_t> Batch(int64_t batch) const;

 private:
  explicit DistributedSampler(const Options& options);
  Options options_;
  int64_t batches_per_epoch_ = 0;
};

}  // namespace cohort::runtime
