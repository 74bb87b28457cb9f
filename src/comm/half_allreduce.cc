#include "comm/half_allreduce.h"

#include <algorithm>

#include "comm/internal/chunk_pipeline.h"
#include "comm/vector_kernels.h"

namespace cohort::comm {

absl::Status AllreduceAsHalf(Communicator& comm, float* data, size_t count, float scale,
                             std::vector<uint16_t>* wire, size_t chunk_elements) {
  if (count == 0) return absl::OkStatus();
  if (data == nullptr || wire == nullptr) {
    return absl::InvalidArgumentError("fp16 allreduce: data or its wire buffer is null");
  }
  if (wire->size() < count) wire->resize(count);
  uint16_t* half = wire->data();
  const size_t chunk = std::max<size_t>(1, chunk_elements);
  const size_t chunks = (count + chunk - 1) / chunk;
  auto size = [&](size_t i) { return std::min(chunk, count - i * chunk); };
  return internal::RunChunkPipeline(
      chunks,
      [&](size_t i) {
        FloatToHalf(data + i * chunk, half + i * chunk, size(i));
        return absl::OkStatus();
      },
      [&](size_t i) {
        return comm.Allreduce(half + i * chunk, size(i), DataType::kFloat16, ReduceOp::kSum);
      },
      [&](size_t i) {
        HalfToFloat(half + i * chunk, data + i * chunk, size(i), scale);
        return absl::OkStatus();
      });
}

}  // namespace cohort::comm
