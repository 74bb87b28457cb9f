#pragma once
// Element-wise kernels the runtime applies to gradient buckets around a collective: fp32 <->
// fp16 (IEEE binary16) conversion for gradient compression (narrow before the bucket travels,
// widen the reduced result) and scaling. Vectorized with F16C/AVX where the CPU has them, scalar
// otherwise; both paths round to nearest even and give identical results. These run over whole
// buckets (tens of MB) on the hot path, where a scalar loop costs more than the memory traffic.
// Thread-safe (pure functions).
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

// data[i] *= scale for i < count.
void Scale(float* data, size_t count, float scale);
void Scale(double* data, size_t count, double scale);

}  // namespace cohort::comm
