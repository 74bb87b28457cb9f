#include "cohort/fashion_mnist.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/env.h"
#include "runtime/idx_file.h"

namespace cohort::runtime {

std::string FashionMnistDir() {
  return env::GetOr("COHORT_DATA_DIR", "/usr/share/datasets/fashion-mnist");
}

absl::StatusOr<FashionMnist> LoadFashionMnist(const std::string& dir, bool train) {
  const std::string prefix = absl::StrCat(dir, "/", train ? "train" : "t10k");
  auto read = [](const std::string& path) -> absl::StatusOr<IdxArray> {
    absl::StatusOr<IdxArray> array = ReadIdxFile(path);
    if (absl::IsNotFound(array.status())) {
      return absl::NotFoundError(absl::StrCat(
          array.status().message(),
          " (Fashion-MNIST comes with Debian's dataset-fashion-mnist: run scripts/install.sh, "
          "or set COHORT_DATA_DIR to a directory holding the four .gz files)"));
    }
    return array;
  };
  COHORT_ASSIGN_OR_RETURN(IdxArray images, read(prefix + "-images-idx3-ubyte.gz"));
  COHORT_ASSIGN_OR_RETURN(IdxArray labels, read(prefix + "-labels-idx1-ubyte.gz"));
  if (images.dims.size() != 3 || images.dims[1] != 28 || images.dims[2] != 28 ||
      labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return absl::DataLossError(absl::StrCat(
        prefix, ": expected images [N,28,28] and labels [N], got [",
        absl::StrJoin(images.dims, ","), "] and [", absl::StrJoin(labels.dims, ","), "]"));
  }
  const int64_t n = images.dims[0];
  FashionMnist out;
  out.images = torch::from_blob(images.data.data(), {n, 1, 28, 28}, torch::kUInt8)
                   .to(torch::kFloat32)
                   .div_(255.0)
                   .sub_(kFashionMnistMean)
                   .div_(kFashionMnistStd);
  out.labels = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kInt64);
  if (out.labels.max().item<int64_t>() >= 10) {
    return absl::DataLossError(absl::StrCat(prefix, ": labels outside [0, 10)"));
  }
  return out;
}

}  // namespace cohort::runtime
