#include "comm/vector_kernels.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/internal/reduce_kernels.h"
#include "gtest/gtest.h"

namespace cohort::comm {
namespace {

TEST(VectorKernelsTest, BulkConversionMatchesTheScalarReferenceForOddLengths) {
  for (size_t n : {0u, 1u, 7u, 16u, 17u, 1003u}) {
    std::vector<float> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = 0.013f * static_cast<float>(i) - 5.0f;
    std::vector<uint16_t> half(n);
    FloatToHalf(src.data(), half.data(), n);
    std::vector<float> back(n);
    HalfToFloat(half.data(), back.data(), n, 0.5f);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(half[i], internal::FloatToHalf(src[i])) << "n=" << n << " i=" << i;
      ASSERT_EQ(back[i], internal::HalfToFloat(half[i]) * 0.5f) << "n=" << n << " i=" << i;
      EXPECT_NEAR(back[i], src[i] * 0.5f, std::fabs(src[i]) * 1e-3 + 1e-7);
    }
  }
}

TEST(VectorKernelsTest, OutOfRangeValuesBecomeInfinity) {
  float src[16];
  for (float& v : src) v = 1e6f;
  uint16_t half[16];
  FloatToHalf(src, half, 16);
  float back[16];
  HalfToFloat(half, back, 16);
  for (float v : back) EXPECT_TRUE(std::isinf(v));
}

TEST(VectorKernelsTest, ScaleMultipliesEveryElementIncludingTheTail) {
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 1003u}) {
    std::vector<float> f(n);
    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) f[i] = d[i] = static_cast<double>(i) - 7.25;
    Scale(f.data(), n, 0.25f);
    Scale(d.data(), n, 0.125);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(f[i], static_cast<float>((static_cast<double>(i) - 7.25) * 0.25)) << i;
      ASSERT_EQ(d[i], (static_cast<double>(i) - 7.25) * 0.125) << i;
    }
  }
}

}  // namespace
}  // namespace cohort::comm
