#pragma once
// Element-wise reduction kernels shared by the transports (the shared-memory reduction and
// Gloo's custom reduce functions). fp16 is widened to fp32 with F16C, summed, and narrowed
// (round to nearest even), 8 or 16 lanes at a time where the CPU allows; a scalar fallback
// covers other CPUs. Thread-safe (pure functions).

#include <cstddef>

#include "cohort/comm/communicator.h"

namespace cohort::comm::internal {

// dst[i] += src[i] for i < count. dst and src may not overlap unless equal.
void SumInto(void* dst, const void* src, size_t count, DataType dtype);

// dst[i] = a[i] + b[i] for i < count. dst may equal a or b.
void Sum2(void* dst, const void* a, const void* b, size_t count, DataType dtype);

// dst[i] = srcs[0][i] + ... + srcs[n - 1][i] for i < count, 1 <= n <= kMaxSumInputs, in one
// pass over memory (the shared-memory reduction sums every local rank's piece at once). dst may
// equal any of the srcs exactly; partial overlaps are not allowed. Integer sums wrap. fp16 inputs are accumulated in fp32 and rounded
// once at the end, which is also more accurate than pairwise fp16 sums.
inline constexpr int kMaxSumInputs = 64;
void SumMany(void* dst, const void* const* srcs, int n, size_t count, DataType dtype);

// data[i] /= divisor; integers round toward zero.
void Divide(void* data, size_t count, DataType dtype, int divisor);

// Scalar conversions (IEEE binary16, round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);

}  // namespace cohort::comm::internal
