#pragma once
// AllreduceAsHalf: the sum of an fp32 buffer across a communicator's group, times `scale`,
// with fp16 (IEEE binary16) on the wire: gradient compression. Half the bytes of an fp32
// allreduce, at fp16's precision (about 3 significant digits; partial sums beyond 65504 become
// inf). Buffers above `chunk_elements` go in chunks, pipelined (internal/chunk_pipeline.h):
// while chunk i is exchanged on a thread of its own, the calling thread narrows chunk i + 1 to
// fp16 and widens chunk i - 1 back, so the conversions (a pass over the buffer each way) hide
// behind the exchange instead of adding to it. Every rank must call it with the same count and
// chunk_elements. On an error `data` is unspecified (some chunks may be reduced); the
// communicator's own error says which peer or deadline failed.
//
// Example (the gradient reducer's fp16 path, averaged over the ranks):
//   COHORT_RETURN_IF_ERROR(comm::AllreduceAsHalf(*comm, grads, n, 1.0f / comm->size(), &wire));

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "cohort/comm/communicator.h"

namespace cohort::comm {

// 2 M elements: 4 MiB of fp16 per exchange, each conversion of a chunk a few milliseconds.
inline constexpr size_t kHalfAllreduceChunkElements = size_t{2} << 20;

// `wire`: scratch for the fp16 copy, grown to `count` (kept by the caller across calls).
absl::Status AllreduceAsHalf(Communicator& comm, float* data, size_t count, float scale,
                             std::vector<uint16_t>* wire,
                             size_t chunk_elements = kHalfAllreduceChunkElements);

}  // namespace cohort::comm
