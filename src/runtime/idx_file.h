#pragma once
// ReadIdxFile: the IDX format of MNIST and Fashion-MNIST (big-endian header: two zero bytes, a
// type code, the number of dimensions, one 32-bit size per dimension, then the data), plain or
// gzip-compressed. Only unsigned bytes (type 0x08) are supported, which is what both datasets
// use. No LibTorch. Thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cohort::runtime {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

// NotFound names the file when it is missing; DataLoss names it and says what is wrong when the
// header or length is malformed.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

}  // namespace cohort::runtime
