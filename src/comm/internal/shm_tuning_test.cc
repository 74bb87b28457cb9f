#include "comm/internal/shm_tuning.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

using ::cohort::testing_support::StatusIs;

ShmMachine TwoOnTwo() { return {2, true, 2, 1 << 20}; }
ShmMachine FourOnTwo() { return {4, true, 2, 1 << 20}; }

TEST(ShmTuningTest, SizeClassesSplitAtTheGeometricMidpoints) {
  EXPECT_EQ(ShmSizeClass(0), 0);
  EXPECT_EQ(ShmSizeClass((16 << 10) - 1), 0);
  EXPECT_EQ(ShmSizeClass(16 << 10), 1);
  EXPECT_EQ(ShmSizeClass((256 << 10) - 1), 1);
  EXPECT_EQ(ShmSizeClass(256 << 10), 2);
  EXPECT_EQ(ShmSizeClass((4 << 20) - 1), 2);
  EXPECT_EQ(ShmSizeClass(4 << 20), 3);
  EXPECT_EQ(ShmSizeClass(size_t{1} << 40), 3);
  for (int c = 0; c < kShmSizeClasses; ++c) EXPECT_EQ(ShmSizeClass(kShmClassBytes[c]), c);
}

TEST(ShmTuningTest, ConstantsTakeSingleCopyFromOneMebibyteOnlyWhenRanksFitTheCores) {
  ShmTuning two = ConstantShmTuning(TwoOnTwo());
  EXPECT_EQ(two.classes[1].path, ShmPath::kStaged);
  EXPECT_EQ(two.classes[2].path, ShmPath::kCma);
  EXPECT_EQ(two.classes[3].path, ShmPath::kCma);
  EXPECT_EQ(two.wait.spin_iterations, 1024u);
  ShmTuning four = ConstantShmTuning(FourOnTwo());
  for (const ShmChoice& c : four.classes) EXPECT_EQ(c.path, ShmPath::kStaged);
  EXPECT_EQ(four.wait.spin_iterations, 64u);
  ShmMachine no_cma = TwoOnTwo();
  no_cma.cma_ok = false;
  for (const ShmChoice& c : ConstantShmTuning(no_cma).classes) EXPECT_EQ(c.path, ShmPath::kStaged);
}

TEST(ShmTuningTest, CmaMinBytesForcesThePathWhateverTheCoreCount) {
  for (const ShmChoice& c : ShmTuningFromCmaMinBytes(FourOnTwo(), 1).classes) {
    EXPECT_EQ(c.path, ShmPath::kCma);
  }
  for (const ShmChoice& c : ShmTuningFromCmaMinBytes(TwoOnTwo(), 0).classes) {
    EXPECT_EQ(c.path, ShmPath::kStaged);
  }
  EXPECT_EQ(ShmTuningFromCmaMinBytes(TwoOnTwo(), 1).source, ShmTuningSource::kEnvironment);
}

TEST(ShmTuningTest, CandidatesPutTheConstantFirstAndDropOnesThatBehaveAlike) {
  for (int c = 0; c < kShmSizeClasses; ++c) {
    std::vector<ShmChoice> all = ShmPathCandidates(TwoOnTwo(), c);
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all[0], ConstantShmTuning(TwoOnTwo()).classes[c]) << "class " << c;
  }
  // 4 KiB: every staged slot and every single-copy chunk covers the whole buffer.
  EXPECT_EQ(ShmPathCandidates(TwoOnTwo(), 0).size(), 2u);
  // 16 MiB: staged with two slot sizes, single-copy with three chunk sizes.
  EXPECT_EQ(ShmPathCandidates(TwoOnTwo(), 3).size(), 5u);
  ShmMachine no_cma = TwoOnTwo();
  no_cma.cma_ok = false;
  for (const ShmChoice& c : ShmPathCandidates(no_cma, 3)) EXPECT_EQ(c.path, ShmPath::kStaged);
  EXPECT_EQ(ShmWaitCandidates(FourOnTwo())[0], (ShmWait{64, 16}));
  EXPECT_EQ(ShmWaitCandidates(FourOnTwo()).size(), 3u);
}

TEST(ShmTuningTest, PickKeepsTheIncumbentUnlessAnotherIsClearlyFaster) {
  EXPECT_EQ(PickShmCandidate({1.0, 0.97, 0.99}), 0u);  // within 5%: noise
  EXPECT_EQ(PickShmCandidate({1.0, 0.90, 0.80}), 2u);
  EXPECT_EQ(PickShmCandidate({1.0, 2.0}), 0u);
  EXPECT_EQ(PickShmCandidate({1.0}), 0u);
}

TEST(ShmTuningTest, WireRoundTripsAndRefusesWhatTheMachineCannotRun) {
  ShmTuning t = ConstantShmTuning(TwoOnTwo());
  t.classes[0] = {ShmPath::kStaged, 256 << 10};
  t.classes[3] = {ShmPath::kCma, 64 << 10};
  t.wait = {0, 0};
  t.source = ShmTuningSource::kMeasured;
  const std::string wire = EncodeShmTuning(&t);
  ASSERT_EQ(wire.size(), kShmTuningWireBytes);
  auto back = DecodeShmTuning(wire, TwoOnTwo());
  ASSERT_OK(back);
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->classes, t.classes);
  EXPECT_EQ((*back)->wait, t.wait);
  EXPECT_EQ((*back)->source, ShmTuningSource::kMeasured);

  auto measure = DecodeShmTuning(EncodeShmTuning(nullptr), TwoOnTwo());
  ASSERT_OK(measure);
  EXPECT_FALSE(measure->has_value());

  ShmMachine no_cma = TwoOnTwo();
  no_cma.cma_ok = false;
  EXPECT_THAT(DecodeShmTuning(wire, no_cma), StatusIs(absl::StatusCode::kInvalidArgument));
  t.classes[1].chunk_bytes = 2 << 20;  // staged beyond the segment's 1 MiB slot
  EXPECT_THAT(DecodeShmTuning(EncodeShmTuning(&t), TwoOnTwo()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(DecodeShmTuning("short", TwoOnTwo()), StatusIs(absl::StatusCode::kInvalidArgument));
  std::string bad = wire;
  bad[4] = 7;  // no such path
  EXPECT_THAT(DecodeShmTuning(bad, TwoOnTwo()), StatusIs(absl::StatusCode::kInvalidArgument));
}

class ShmTuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("shm-tuning-test-", ::getpid(), "-", ::testing::UnitTest::GetInstance()
                                                                 ->current_test_info()
                                                                 ->name());
    ::setenv("COHORT_COMM_CACHE_DIR", (dir_ / "nested").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("COHORT_COMM_CACHE_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(ShmTuningCacheTest, SavedTuningLoadsBackOnTheSameMachineOnly) {
  const ShmTuningCache cache = ShmTuningCacheFor(TwoOnTwo());
  const std::string& path = cache.path;
  ASSERT_TRUE(absl::StartsWith(path, (dir_ / "nested" / "shm-").string())) << path;
  EXPECT_NE(path, ShmTuningCacheFor(FourOnTwo()).path);  // the rank count is in the key
  EXPECT_THAT(LoadShmTuning(cache, TwoOnTwo()), StatusIs(absl::StatusCode::kNotFound));

  ShmTuning t = ConstantShmTuning(TwoOnTwo());
  t.classes[2] = {ShmPath::kStaged, 256 << 10};
  t.calibration_seconds = 0.08;
  t.measurements.push_back({2, "staged 256 KiB", 1e-4, true});
  ASSERT_OK(SaveShmTuning(cache, t));
  auto back = LoadShmTuning(cache, TwoOnTwo());
  ASSERT_OK(back);
  EXPECT_EQ(back->classes, t.classes);
  EXPECT_EQ(back->source, ShmTuningSource::kCache);
  EXPECT_EQ(back->cache_path, path);
  ASSERT_EQ(back->measurements.size(), 1u);
  EXPECT_EQ(back->measurements[0].candidate, "staged 256 KiB");
  EXPECT_TRUE(absl::StrContains(ExplainShmTuning(*back, 2), "staged 256 KiB"));

  // Read for another machine (here: another slot size), the file is stale, not trusted.
  ShmMachine other = TwoOnTwo();
  other.slot_bytes = 2 << 20;
  EXPECT_THAT(LoadShmTuning({ShmMachineKey(other), path}, other),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ShmTuningCacheTest, DamagedCacheIsAnErrorNamingTheFile) {
  const ShmTuningCache cache = ShmTuningCacheFor(TwoOnTwo());
  const std::string& path = cache.path;
  ASSERT_OK(SaveShmTuning(cache, ConstantShmTuning(TwoOnTwo())));
  for (const std::string& text :
       {std::string("{not json"), std::string("[") + std::string(500, '[') ,
        absl::StrCat("{\"key\":\"", cache.key, "\",\"classes\":[]}"),
        absl::StrCat("{\"key\":\"", cache.key,
                     "\",\"calibration_seconds\":0,\"wait\":{\"spin\":1,\"yield\":1},"
                     "\"measurements\":[],\"classes\":[{\"path\":\"staged\",\"chunk_bytes\":1},"
                     "{\"path\":\"staged\",\"chunk_bytes\":4096},{\"path\":\"staged\",\"chunk_"
                     "bytes\":4096},{\"path\":\"staged\",\"chunk_bytes\":4096}]}")}) {
    std::ofstream(path) << text;
    auto loaded = LoadShmTuning(cache, TwoOnTwo());
    EXPECT_THAT(loaded, StatusIs(absl::StatusCode::kInvalidArgument)) << text.substr(0, 40);
    EXPECT_TRUE(absl::StrContains(loaded.status().message(), path)) << loaded.status();
  }
}

TEST_F(ShmTuningCacheTest, CalibrateModeComesFromTheEnvironment) {
  ::unsetenv("COHORT_COMM_CALIBRATE");
  EXPECT_EQ(ShmCalibrateModeFromEnv().value(), ShmCalibrateMode::kAuto);
  ::setenv("COHORT_COMM_CALIBRATE", "force", 1);
  EXPECT_EQ(ShmCalibrateModeFromEnv().value(), ShmCalibrateMode::kForce);
  ::setenv("COHORT_COMM_CALIBRATE", "OFF", 1);
  EXPECT_EQ(ShmCalibrateModeFromEnv().value(), ShmCalibrateMode::kOff);
  ::setenv("COHORT_COMM_CALIBRATE", "sometimes", 1);
  auto bad = ShmCalibrateModeFromEnv();
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "COHORT_COMM_CALIBRATE=sometimes"));
  ::unsetenv("COHORT_COMM_CALIBRATE");
}

}  // namespace
}  // namespace cohort::comm::internal
