#include "runtime/distributed_sampler.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using ::cohort::testing_support::StatusIs;

DistributedSampler Make(int64_t n, int64_t batch, int rank, int size, uint64_t seed = 7) {
  return DistributedSampler::Create(
             {.dataset_size = n, .per_slot_batch = batch, .rank = rank, .size = size, .seed = seed})
      .value();
}

TEST(DistributedSamplerTest, ShardsAreDisjointAndCoverTheEpochExceptTheUnevenTail) {
  const int size = 3;
  std::set<int64_t> seen;
  for (int r = 0; r < size; ++r) {
    DistributedSampler s = Make(1003, 10, r, size);
    EXPECT_EQ(s.samples_per_rank(), 330);  // 1003 / 3 = 334 -> 33 whole batches of 10
    for (int64_t i : s.EpochIndices(0)) {
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " in two shards";
      EXPECT_GE(i, 0);
      EXPECT_LT(i, 1003);
    }
  }
  EXPECT_EQ(seen.size(), 990u);
}

TEST(DistributedSamplerTest, OrderIsAPureFunctionOfSeedEpochAndRank) {
  EXPECT_EQ(Make(500, 5, 1, 2).EpochIndices(3), Make(500, 5, 1, 2).EpochIndices(3));
  EXPECT_NE(Make(500, 5, 1, 2).EpochIndices(3), Make(500, 5, 1, 2).EpochIndices(4))
      << "epochs must be reshuffled";
  EXPECT_NE(Make(500, 5, 1, 2, 7).EpochIndices(0), Make(500, 5, 1, 2, 8).EpochIndices(0));
}

TEST(DistributedSamplerTest, BatchesWalkTheEpochsInOrder) {
  DistributedSampler s = Make(100, 8, 0, 2);  // 50 per rank -> 6 batches of 8 per epoch
  ASSERT_EQ(s.batches_per_epoch(), 6);
  std::vector<int64_t> epoch1 = s.EpochIndices(1);
  std::vector<int64_t> batch8 = s.Batch(6 + 2);  // epoch 1, third batch
  EXPECT_EQ(batch8, std::vector<int64_t>(epoch1.begin() + 16, epoch1.begin() + 24));
}

TEST(DistributedSamplerTest, UnshuffledShardsAreStridedDatasetOrder) {
  auto s = DistributedSampler::Create(
      {.dataset_size = 10, .per_slot_batch = 2, .rank = 1, .size = 3, .shuffle = false});
  ASSERT_OK(s);
  EXPECT_EQ(s->EpochIndices(0), (std::vector<int64_t>{1, 4}));
}

TEST(DistributedSamplerTest, ShuffleIsRoughlyUniform) {
  // Where does sample 0 land over many epochs? Every position of a 10-sample epoch ~10%.
  std::vector<int> position(10, 0);
  DistributedSampler s = Make(10, 1, 0, 1);
  for (int epoch = 0; epoch < 20000; ++epoch) {
    std::vector<int64_t> order = s.EpochIndices(epoch);
    ++position[std::find(order.begin(), order.end(), 0) - order.begin()];
  }
  for (int p : position) {
    EXPECT_GT(p, 1700);
    EXPECT_LT(p, 2300);
  }
}

TEST(DistributedSamplerTest, RejectsBadArgumentsNamingThem) {
  EXPECT_NE(DistributedSampler::Create({.dataset_size = 10, .rank = 2, .size = 2})
                .status()
                .message()
                .find("rank 2"),
            absl::string_view::npos);
  auto tiny = DistributedSampler::Create({.dataset_size = 10, .per_slot_batch = 8, .size = 2});
  EXPECT_THAT(tiny, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(tiny.status().message().find("fewer than one batch"), absl::string_view::npos);
}

}  // namespace
}  // namespace cohort::runtime
