#pragma once
// Bulk fp32 <-> fp16 (IEEE binary16) conversion for gradient compression: the runtime narrows a
// gradient bucket to fp16 before it travels and widens the reduced result. Vectorized with F16C
// (8 lanes) where the CPU has it, scalar otherwise; both round to nearest even and give
// identical results. Thread-safe (pure functions).
//
// Example:
//   std::vector<uint16_t> wire(n);
//   comm::FloatToHalf(grads, wire.data(), n);
//   comm->Allreduce(wire.data(), n, comm::DataType::kFloat16, comm::ReduceOp::kSum);
//   comm::HalfToFloat(wire.data(), grads, n, /*scale=*/1.0f / comm->size());

#include <cstddef>
#include <cstdint>

namespace cohort::comm {

// dst[i] = fp16(src[i]) for i < count. Values beyond the fp16 range become +-inf.
void FloatToHalf(const float* src, uint16_t* dst, size_t count);

// dst[i] = float(src[i]) * scale for i < count.
void HalfToFloat(const uint16_t* src, float* dst, size_t count, float scale = 1.0f);

}  // namespace cohort::comm
