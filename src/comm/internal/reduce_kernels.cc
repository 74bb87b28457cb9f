#include "comm/internal/reduce_kernels.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cohort::comm::internal {
namespace {

bool HasF16cAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return has;
}

template <typename T>
void SumScalar(T* dst, const T* a, const T* b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = a[i] + b[i];
}

void Sum2HalfScalar(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToHalf(HalfToFloat(a[i]) + HalfToFloat(b[i]));
}

__attribute__((target("avx2,f16c"))) void Sum2HalfAvx2(uint16_t* dst, const uint16_t* a,
                                                        const uint16_t* b, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + 8)));
    __m256 b0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    __m256 b1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + 8)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_add_ps(a0, b0), _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 8),
                     _mm256_cvtps_ph(_mm256_add_ps(a1, b1), _MM_FROUND_TO_NEAREST_INT));
  }
  Sum2HalfScalar(dst + i, a + i, b + i, count - i);
}

__attribute__((target("avx2,f16c"))) void DivideHalfAvx2(uint16_t* data, size_t count,
                                                          float divisor) {
  size_t i = 0;
  const __m256 inv = _mm256_set1_ps(divisor);
  for (; i + 8 <= count; i += 8) {
    __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(data + i),
                     _mm256_cvtps_ph(_mm256_div_ps(v, inv), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < count; ++i) data[i] = FloatToHalf(HalfToFloat(data[i]) / divisor);
}

// Division, not multiplication by the reciprocal, so averages are exactly rounded for every n.
// A scalar division loop ran at ~1 element per 4 cycles, which made the average cost as much as
// the whole shared-memory reduction of a 64 MB gradient bucket.
__attribute__((target("avx"))) void DivideFloatAvx(float* p, size_t count, float divisor) {
  size_t i = 0;
  const __m256 d = _mm256_set1_ps(divisor);
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(p + i, _mm256_div_ps(_mm256_loadu_ps(p + i), d));
  for (; i < count; ++i) p[i] /= divisor;
}

__attribute__((target("avx"))) void DivideDoubleAvx(double* p, size_t count, double divisor) {
  size_t i = 0;
  const __m256d d = _mm256_set1_pd(divisor);
  for (; i + 4 <= count; i += 4) _mm256_storeu_pd(p + i, _mm256_div_pd(_mm256_loadu_pd(p + i), d));
  for (; i < count; ++i) p[i] /= divisor;
}

// SumMany kernels. The loops walk `count` once and read every input at the same offset, so a
// reduction over n ranks costs one pass over memory instead of n - 1 (Sum2 applied repeatedly).
template <typename T>
void SumManyScalar(T* dst, const T* const* srcs, int n, size_t begin, size_t count) {
  for (size_t i = begin; i < count; ++i) {
    T acc = srcs[0][i];
    for (int k = 1; k < n; ++k) acc += srcs[k][i];
    dst[i] = acc;
  }
}

void SumManyHalfScalar(uint16_t* dst, const uint16_t* const* srcs, int n, size_t begin,
                       size_t count) {
  for (size_t i = begin; i < count; ++i) {
    float acc = HalfToFloat(srcs[0][i]);
    for (int k = 1; k < n; ++k) acc += HalfToFloat(srcs[k][i]);
    dst[i] = FloatToHalf(acc);
  }
}

// Lambdas do not inherit a function's target attribute, hence these small helpers.
__attribute__((target("avx2,f16c"))) inline __m256 WidenHalves(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <typename T>
__attribute__((target("avx2"))) inline __m256i LoadInts(const T* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// 32 floats (four 256-bit accumulators) per step hide the add latency behind the loads.
__attribute__((target("avx2"))) void SumManyFloatAvx2(float* dst, const float* const* srcs, int n,
                                                      size_t count) {
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m256 a0 = _mm256_loadu_ps(srcs[0] + i);
    __m256 a1 = _mm256_loadu_ps(srcs[0] + i + 8);
    __m256 a2 = _mm256_loadu_ps(srcs[0] + i + 16);
    __m256 a3 = _mm256_loadu_ps(srcs[0] + i + 24);
    for (int k = 1; k < n; ++k) {
      const float* s = srcs[k] + i;
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(s));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(s + 8));
      a2 = _mm256_add_ps(a2, _mm256_loadu_ps(s + 16));
      a3 = _mm256_add_ps(a3, _mm256_loadu_ps(s + 24));
    }
    _mm256_storeu_ps(dst + i, a0);
    _mm256_storeu_ps(dst + i + 8, a1);
    _mm256_storeu_ps(dst + i + 16, a2);
    _mm256_storeu_ps(dst + i + 24, a3);
  }
  SumManyScalar(dst, srcs, n, i, count);
}

__attribute__((target("avx2"))) void SumManyDoubleAvx2(double* dst, const double* const* srcs,
                                                       int n, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256d a0 = _mm256_loadu_pd(srcs[0] + i);
    __m256d a1 = _mm256_loadu_pd(srcs[0] + i + 4);
    __m256d a2 = _mm256_loadu_pd(srcs[0] + i + 8);
    __m256d a3 = _mm256_loadu_pd(srcs[0] + i + 12);
    for (int k = 1; k < n; ++k) {
      const double* s = srcs[k] + i;
      a0 = _mm256_add_pd(a0, _mm256_loadu_pd(s));
      a1 = _mm256_add_pd(a1, _mm256_loadu_pd(s + 4));
      a2 = _mm256_add_pd(a2, _mm256_loadu_pd(s + 8));
      a3 = _mm256_add_pd(a3, _mm256_loadu_pd(s + 12));
    }
    _mm256_storeu_pd(dst + i, a0);
    _mm256_storeu_pd(dst + i + 4, a1);
    _mm256_storeu_pd(dst + i + 8, a2);
    _mm256_storeu_pd(dst + i + 12, a3);
  }
  SumManyScalar(dst, srcs, n, i, count);
}

// Integer sums wrap (two's complement), like the scalar loop; the lane width picks 32 or 64.
template <typename T>
__attribute__((target("avx2"))) void SumManyIntAvx2(T* dst, const T* const* srcs, int n,
                                                    size_t count) {
  constexpr size_t kLanes = 32 / sizeof(T);
  size_t i = 0;
  for (; i + 2 * kLanes <= count; i += 2 * kLanes) {
    __m256i a0 = LoadInts(srcs[0] + i);
    __m256i a1 = LoadInts(srcs[0] + i + kLanes);
    for (int k = 1; k < n; ++k) {
      if constexpr (sizeof(T) == 4) {
        a0 = _mm256_add_epi32(a0, LoadInts(srcs[k] + i));
        a1 = _mm256_add_epi32(a1, LoadInts(srcs[k] + i + kLanes));
      } else {
        a0 = _mm256_add_epi64(a0, LoadInts(srcs[k] + i));
        a1 = _mm256_add_epi64(a1, LoadInts(srcs[k] + i + kLanes));
      }
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), a0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i + kLanes), a1);
  }
  for (; i < count; ++i) {
    // Unsigned arithmetic: wrapping is defined, matching the vector lanes.
    using U = std::make_unsigned_t<T>;
    U acc = static_cast<U>(srcs[0][i]);
    for (int k = 1; k < n; ++k) acc += static_cast<U>(srcs[k][i]);
    dst[i] = static_cast<T>(acc);
  }
}

__attribute__((target("avx2,f16c"))) void SumManyHalfAvx2(uint16_t* dst,
                                                           const uint16_t* const* srcs, int n,
                                                           size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256 a0 = WidenHalves(srcs[0] + i);
    __m256 a1 = WidenHalves(srcs[0] + i + 8);
    for (int k = 1; k < n; ++k) {
      a0 = _mm256_add_ps(a0, WidenHalves(srcs[k] + i));
      a1 = _mm256_add_ps(a1, WidenHalves(srcs[k] + i + 8));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(a0, _MM_FROUND_TO_NEAREST_INT));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 8),
                     _mm256_cvtps_ph(a1, _MM_FROUND_TO_NEAREST_INT));
  }
  SumManyHalfScalar(dst, srcs, n, i, count);
}

}  // namespace

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal or zero in fp16
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t exp = abs >> 23;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 - (exp - 127) + 13 - 1 ... aligns to fp16 subnormal
    uint32_t half_mant = mant >> (shift - 0);
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

void Sum2(void* dst, const void* a, const void* b, size_t count, DataType dtype) {
  if (dtype == DataType::kFloat16) {
    if (HasF16cAvx2()) {
      Sum2HalfAvx2(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                   static_cast<const uint16_t*>(b), count);
    } else {
      Sum2HalfScalar(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                     static_cast<const uint16_t*>(b), count);
    }
    return;
  }
  const void* srcs[2] = {a, b};
  SumMany(dst, srcs, 2, count, dtype);
}

void SumMany(void* dst, const void* const* srcs, int n, size_t count, DataType dtype) {
  const bool avx2 = HasF16cAvx2();
  switch (dtype) {
    case DataType::kFloat32: {
      auto d = static_cast<float*>(dst);
      auto s = reinterpret_cast<const float* const*>(srcs);
      avx2 ? SumManyFloatAvx2(d, s, n, count) : SumManyScalar(d, s, n, 0, count);
      return;
    }
    case DataType::kFloat64: {
      auto d = static_cast<double*>(dst);
      auto s = reinterpret_cast<const double* const*>(srcs);
      avx2 ? SumManyDoubleAvx2(d, s, n, count) : SumManyScalar(d, s, n, 0, count);
      return;
    }
    case DataType::kInt32: {
      auto d = static_cast<int32_t*>(dst);
      auto s = reinterpret_cast<const int32_t* const*>(srcs);
      avx2 ? SumManyIntAvx2(d, s, n, count) : SumManyScalar(d, s, n, 0, count);
      return;
    }
    case DataType::kInt64: {
      auto d = static_cast<int64_t*>(dst);
      auto s = reinterpret_cast<const int64_t* const*>(srcs);
      avx2 ? SumManyIntAvx2(d, s, n, count) : SumManyScalar(d, s, n, 0, count);
      return;
    }
    case DataType::kFloat16: {
      auto d = static_cast<uint16_t*>(dst);
      auto s = reinterpret_cast<const uint16_t* const*>(srcs);
      avx2 ? SumManyHalfAvx2(d, s, n, count) : SumManyHalfScalar(d, s, n, 0, count);
      return;
    }
  }
}

void SumInto(void* dst, const void* src, size_t count, DataType dtype) {
  Sum2(dst, dst, src, count, dtype);
}

void Divide(void* data, size_t count, DataType dtype, int divisor) {
  switch (dtype) {
    case DataType::kFloat32: {
      float* p = static_cast<float*>(data);
      if (HasF16cAvx2()) {
        DivideFloatAvx(p, count, static_cast<float>(divisor));
      } else {
        for (size_t i = 0; i < count; ++i) p[i] /= static_cast<float>(divisor);
      }
      return;
    }
    case DataType::kFloat64: {
      double* p = static_cast<double*>(data);
      if (HasF16cAvx2()) {
        DivideDoubleAvx(p, count, divisor);
      } else {
        for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      }
      return;
    }
    case DataType::kInt32: {
      int32_t* p = static_cast<int32_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      return;
    }
    case DataType::kInt64: {
      int64_t* p = static_cast<int64_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      return;
    }
    case DataType::kFloat16: {
      uint16_t* p = static_cast<uint16_t*>(data);
      if (HasF16cAvx2()) {
        DivideHalfAvx2(p, count, static_cast<float>(divisor));
      } else {
        for (size_t i = 0; i < count; ++i) p[i] = FloatToHalf(HalfToFloat(p[i]) / divisor);
      }
      return;
    }
  }
}

}  // namespace cohort::comm::internal
