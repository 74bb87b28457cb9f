#pragma once
// Fashion-MNIST (Debian's dataset-fashion-mnist, /usr/share/datasets/fashion-mnist) as
// in-memory tensors. Thread-safe.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(FashionMnist train, LoadFashionMnist(FashionMnistDir(), true));
//   torch::Tensor batch = train.images.index_select(0, indices);

#include <string>

#include <torch/types.h>

#include "absl/status/statusor.h"

namespace cohort::runtime {

struct FashionMnist {
  torch::Tensor images;  // [N, 1, 28, 28] float32, (x / 255 - mean) / std
  torch::Tensor labels;  // [N] int64 in [0, 10)
};

// Per-pixel mean and standard deviation of the training images (after scaling to [0, 1]).
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;

// COHORT_DATA_DIR when set, else /usr/share/datasets/fashion-mnist.
std::string FashionMnistDir();

// Loads the training split (60000 images) or the test split (10000). A missing file is
// NotFound naming it and the package that provides it.
absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir, bool train);

}  // namespace cohort::runtime
