#include "runtime/distributed_sampler.h"

#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/split_mix64.h"

namespace cohort::runtime {

absl::StatusOr<DistributedSampler> DistributedSampler::Create(const Options& options) {
  if (options.size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sampler: size must be >= 1, got ", options.size));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat("sampler: rank ", options.rank,
                                                   " is outside [0, ", options.size, ")"));
  }
  if (options.per_slot_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampler: per-slot batch must be >= 1, got ", options.per_slot_batch));
  }
  const int64_t per_rank = options.dataset_size / options.size;
  if (per_rank < options.per_slot_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampler: a dataset of ", options.dataset_size, " samples gives each of ", options.size,
        " ranks ", per_rank, " samples, fewer than one batch of ", options.per_slot_batch,
        " (use a smaller global_batch_size or fewer slots)"));
  }
  return DistributedSampler(options);
}

DistributedSampler::DistributedSampler(const Options& options)
    : options_(options),
      batches_per_epoch_(options.dataset_size / options.size / options.per_slot_batch) {}

std::vector<int64_t> DistributedSampler::EpochIndices(int64_t epoch) const {
  const int64_t n = options_.dataset_size;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) {
    // Distinct, well-separated streams per epoch; identical on every rank.
    SplitMix64 rng(options_.seed ^ (0x632be59bd9b4e019ull * static_cast<uint64_t>(epoch + 1)));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[i], order[rng.Below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(samples_per_rank()));
  for (int64_t k = 0; k < samples_per_rank(); ++k) {
    mine.push_back(order[k * options_.size + options_.rank]);
  }
  return mine;
}

std::vector<int64_t> DistributedSampler::Batch(int64_t batch) const {
  const int64_t epoch = batch / batches_per_epoch_;
  const int64_t within = batch % batches_per_epoch_;
  std::vector<int64_t> indices = EpochIndices(epoch);
  return std::vector<int64_t>(indices.begin() + within * options_.per_slot_batch,
                              indices.begin() + (within + 1) * options_.per_slot_batch);
}

}  // namespace cohort::runtime
