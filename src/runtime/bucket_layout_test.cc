#include "runtime/bucket_layout.h"

#include <vector>

#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using Buckets = std::vector<std::vector<int>>;
constexpr size_t kMiB = 1 << 20;

TEST(BucketLayoutTest, FirstBucketIsSmallAndLaterOnesFillUpToTheLimit) {
  // Six 1 MiB tensors, ready in reverse order: a 1 MiB first bucket, then 2 MiB buckets.
  std::vector<size_t> bytes(6, kMiB);
  EXPECT_EQ(AssignBuckets(bytes, std::vector<int>(6, 0), {5, 4, 3, 2, 1, 0}, kMiB, 2 * kMiB),
            (Buckets{{5}, {4, 3}, {2, 1}, {0}}));
}

TEST(BucketLayoutTest, MatchesTheHeaderExample) {
  EXPECT_EQ(AssignBuckets({3 * kMiB, 2 * kMiB, kMiB}, {0, 0, 0}, {2, 1, 0}, kMiB, 4 * kMiB),
            (Buckets{{2}, {1, 0}}));
}

TEST(BucketLayoutTest, TensorLargerThanTheLimitGetsItsOwnBucket) {
  EXPECT_EQ(AssignBuckets({kMiB / 2, 10 * kMiB, kMiB / 2}, {0, 0, 0}, {0, 1, 2}, kMiB, kMiB),
            (Buckets{{0, 1}, {2}}));
}

TEST(BucketLayoutTest, ZeroLimitGivesOneBucketPerTensor) {
  EXPECT_EQ(AssignBuckets({4, 4, 4}, {0, 0, 0}, {1, 2, 0}, 0, 0), (Buckets{{1}, {2}, {0}}));
}

TEST(BucketLayoutTest, DtypesNeverShareABucketAndBucketsKeepReadyOrder) {
  // Tensors 0 and 2 are one dtype, 1 and 3 another; ready order 3, 2, 1, 0.
  EXPECT_EQ(AssignBuckets({8, 8, 8, 8}, {0, 1, 0, 1}, {3, 2, 1, 0}, 100, 100),
            (Buckets{{3, 1}, {2, 0}}));
}

TEST(BucketLayoutTest, EveryTensorLandsInExactlyOneBucket) {
  std::vector<size_t> bytes;
  std::vector<int> keys, order;
  for (int i = 0; i < 50; ++i) {
    bytes.push_back(static_cast<size_t>(1 + (i * 7919) % 3000));
    keys.push_back(i % 3);
    order.push_back(49 - i);
  }
  Buckets buckets = AssignBuckets(bytes, keys, order, 1000, 5000);
  std::vector<int> seen(50, 0);
  for (const auto& b : buckets) {
    ASSERT_FALSE(b.empty());
    for (int t : b) {
      ++seen[t];
      EXPECT_EQ(keys[t], keys[b.front()]);
    }
  }
  for (int i = 0; i < 50; ++i) EXPECT_EQ(seen[i], 1) << "tensor " << i;
}

}  // namespace
}  // namespace cohort::runtime
