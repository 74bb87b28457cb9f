#include "comm/half.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "comm/internal/reduce_kernels.h"
#include "gtest/gtest.h"

namespace cohort::comm {
namespace {

TEST(HalfTest, BulkConversionMatchesTheScalarReferenceForOddLengths) {
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

TEST(HalfTest, OutOfRangeValuesBecomeInfinity) {
  float src[16];
  for (float& v : src) v = 1e6f;
  uint16_t half[16];
  FloatToHalf(src, half, 16);
  float back[16];
  HalfToFloat(half, back, 16);
  for (float v : back) EXPECT_TRUE(std::isinf(v));
}

}  // namespace
}  // namespace cohort::comm
