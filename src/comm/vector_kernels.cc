#include "comm/vector_kernels.h"

#include <immintrin.h>

#include "comm/internal/reduce_kernels.h"

namespace cohort::comm {
namespace {

bool HasF16c() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}

__attribute__((target("avx,f16c"))) void FloatToHalfF16c(const float* src, uint16_t* dst,
                                                          size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m128i h0 = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    __m128i h1 = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 8), h1);
  }
  for (; i < count; ++i) dst[i] = internal::FloatToHalf(src[i]);
}

__attribute__((target("avx,f16c"))) void HalfToFloatF16c(const uint16_t* src, float* dst,
                                                          size_t count, float scale) {
  size_t i = 0;
  const __m256 s = _mm256_set1_ps(scale);
  for (; i + 16 <= count; i += 16) {
    __m256 f0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    __m256 f1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 8)));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(f0, s));
    _mm256_storeu_ps(dst + i + 8, _mm256_mul_ps(f1, s));
  }
  for (; i < count; ++i) dst[i] = internal::HalfToFloat(src[i]) * scale;
}

__attribute__((target("avx"))) void ScaleAvx(float* data, size_t count, float scale) {
  size_t i = 0;
  const __m256 s = _mm256_set1_ps(scale);
  for (; i + 16 <= count; i += 16) {
    _mm256_storeu_ps(data + i, _mm256_mul_ps(_mm256_loadu_ps(data + i), s));
    _mm256_storeu_ps(data + i + 8, _mm256_mul_ps(_mm256_loadu_ps(data + i + 8), s));
  }
  for (; i < count; ++i) data[i] *= scale;
}

__attribute__((target("avx"))) void ScaleAvx(double* data, size_t count, double scale) {
  size_t i = 0;
  const __m256d s = _mm256_set1_pd(scale);
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_pd(data + i, _mm256_mul_pd(_mm256_loadu_pd(data + i), s));
    _mm256_storeu_pd(data + i + 4, _mm256_mul_pd(_mm256_loadu_pd(data + i + 4), s));
  }
  for (; i < count; ++i) data[i] *= scale;
}

bool HasAvx() {
  static const bool has = __builtin_cpu_supports("avx");
  return has;
}

}  // namespace

void Scale(float* data, size_t count, float scale) {
  if (HasAvx()) {
    ScaleAvx(data, count, scale);
    return;
  }
  for (size_t i = 0; i < count; ++i) data[i] *= scale;
}

void Scale(double* data, size_t count, double scale) {
  if (HasAvx()) {
    ScaleAvx(data, count, scale);
    return;
  }
  for (size_t i = 0; i < count; ++i) data[i] *= scale;
}

void FloatToHalf(const float* src, uint16_t* dst, size_t count) {
  if (HasF16c()) {
    FloatToHalfF16c(src, dst, count);
    return;
  }
  for (size_t i = 0; i < count; ++i) dst[i] = internal::FloatToHalf(src[i]);
}

void HalfToFloat(const uint16_t* src, float* dst, size_t count, float scale) {
  if (HasF16c()) {
    HalfToFloatF16c(src, dst, count, scale);
    return;
  }
  for (size_t i = 0; i < count; ++i) dst[i] = internal::HalfToFloat(src[i]) * scale;
}

}  // namespace cohort::comm
