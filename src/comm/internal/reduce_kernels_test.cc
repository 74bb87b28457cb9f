#include "comm/internal/reduce_kernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

TEST(ReduceKernelsTest, HalfConversionRoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00u) == 0x7c00u) continue;  // inf/nan
    EXPECT_EQ(FloatToHalf(HalfToFloat(bits)), bits) << "half bits " << h;
  }
}

TEST(ReduceKernelsTest, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(HalfToFloat(FloatToHalf(1.0f)), 1.0f);
  // 2049 lies halfway between the halves 2048 and 2050: ties go to the even mantissa (2048).
  EXPECT_EQ(HalfToFloat(FloatToHalf(2049.0f)), 2048.0f);
  EXPECT_EQ(HalfToFloat(FloatToHalf(2051.0f)), 2052.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(70000.0f))));
  EXPECT_EQ(HalfToFloat(FloatToHalf(-0.5f)), -0.5f);
}

TEST(ReduceKernelsTest, VectorizedHalfSumMatchesScalarForOddLengths) {
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 1001u}) {
    std::vector<uint16_t> a(n), b(n), out(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = FloatToHalf(0.1f * static_cast<float>(i % 97) - 3.0f);
      b[i] = FloatToHalf(0.37f * static_cast<float>(i % 31));
    }
    Sum2(out.data(), a.data(), b.data(), n, DataType::kFloat16);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[i], FloatToHalf(HalfToFloat(a[i]) + HalfToFloat(b[i]))) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ReduceKernelsTest, VectorizedDivideIsExactlyRoundedDivisionForOddLengths) {
  for (size_t n : {1u, 7u, 8u, 9u, 1003u}) {
    for (int divisor : {2, 3, 7}) {
      std::vector<float> f(n);
      std::vector<double> d(n);
      for (size_t i = 0; i < n; ++i) f[i] = d[i] = 0.37 * static_cast<double>(i) - 11.0;
      Divide(f.data(), n, DataType::kFloat32, divisor);
      Divide(d.data(), n, DataType::kFloat64, divisor);
      for (size_t i = 0; i < n; ++i) {
        const double x = 0.37 * static_cast<double>(i) - 11.0;
        ASSERT_EQ(f[i], static_cast<float>(x) / static_cast<float>(divisor)) << n << " " << i;
        ASSERT_EQ(d[i], x / divisor) << n << " " << i;
      }
    }
  }
}

TEST(ReduceKernelsTest, SumIntoAndDivideForEveryDtype) {
  std::vector<int64_t> a = {1, 2, 3}, b = {10, 20, -30};
  SumInto(a.data(), b.data(), 3, DataType::kInt64);
  EXPECT_EQ(a, (std::vector<int64_t>{11, 22, -27}));
  Divide(a.data(), 3, DataType::kInt64, 2);
  EXPECT_EQ(a, (std::vector<int64_t>{5, 11, -13}));
  std::vector<double> d = {1.5, 2.5};
  std::vector<double> e = {0.25, 0.5};
  SumInto(d.data(), e.data(), 2, DataType::kFloat64);
  Divide(d.data(), 2, DataType::kFloat64, 2);
  EXPECT_DOUBLE_EQ(d[0], 0.875);
  EXPECT_DOUBLE_EQ(d[1], 1.5);
  std::vector<uint16_t> h(9, FloatToHalf(3.0f));
  Divide(h.data(), h.size(), DataType::kFloat16, 2);
  for (uint16_t v : h) EXPECT_EQ(HalfToFloat(v), 1.5f);
}

template <typename T>
void ExpectSumManyMatchesScalar(DataType dtype) {
  for (int n : {1, 2, 3, 4, 7}) {
    for (size_t count : {0u, 1u, 31u, 32u, 33u, 1001u}) {
      std::vector<std::vector<T>> inputs(n, std::vector<T>(count));
      std::vector<const void*> srcs;
      for (int k = 0; k < n; ++k) {
        for (size_t i = 0; i < count; ++i) inputs[k][i] = static_cast<T>((k + 1) * (i % 17) - 5);
        srcs.push_back(inputs[k].data());
      }
      std::vector<T> out(count);
      SumMany(out.data(), srcs.data(), n, count, dtype);
      for (size_t i = 0; i < count; ++i) {
        T want = 0;
        for (int k = 0; k < n; ++k) want += inputs[k][i];
        ASSERT_EQ(out[i], want) << DataTypeName(dtype) << " n=" << n << " i=" << i;
      }
      // In place into the first input.
      SumMany(inputs[0].data(), srcs.data(), n, count, dtype);
      EXPECT_EQ(inputs[0], out);
    }
  }
}

TEST(ReduceKernelsTest, SumManyMatchesScalarSumsForEveryDtypeAndLength) {
  ExpectSumManyMatchesScalar<float>(DataType::kFloat32);
  ExpectSumManyMatchesScalar<double>(DataType::kFloat64);
  ExpectSumManyMatchesScalar<int32_t>(DataType::kInt32);
  ExpectSumManyMatchesScalar<int64_t>(DataType::kInt64);
}

TEST(ReduceKernelsTest, SumManyOfHalvesRoundsOnceAtTheEnd) {
  for (size_t count : {0u, 1u, 15u, 16u, 17u, 1001u}) {
    std::vector<std::vector<uint16_t>> inputs(3, std::vector<uint16_t>(count));
    std::vector<const void*> srcs;
    for (int k = 0; k < 3; ++k) {
      for (size_t i = 0; i < count; ++i) {
        inputs[k][i] = FloatToHalf(0.1f * static_cast<float>((i + k) % 97) - 3.0f);
      }
      srcs.push_back(inputs[k].data());
    }
    std::vector<uint16_t> out(count);
    SumMany(out.data(), srcs.data(), 3, count, DataType::kFloat16);
    for (size_t i = 0; i < count; ++i) {
      float want = HalfToFloat(inputs[0][i]) + HalfToFloat(inputs[1][i]) + HalfToFloat(inputs[2][i]);
      EXPECT_EQ(out[i], FloatToHalf(want)) << "count=" << count << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace cohort::comm::internal
