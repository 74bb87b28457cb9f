// In-process tests of ShmCommunicator: each rank is a thread with its own Rendezvous and its
// own mapping of the segment, which exercises the same code paths as separate processes (the
// multi-process conformance suite is tests/comm/collectives_test.cc).
#include "comm/shm_communicator.h"

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "comm/half_allreduce.h"
#include "comm/internal/shm_sync.h"
#include "comm/internal/shm_tuning.h"
#include "comm/tcp_store.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm {
namespace {

using ::cohort::testing_support::StatusIs;

// Entries this process created in /dev/shm (ShmSegment names embed the creator's pid).
std::vector<std::string> OurShmEntries() {
  std::vector<std::string> out;
  const std::string prefix = absl::StrCat("cohort-shm-", ::getpid(), "-");
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, prefix)) out.push_back(name);
  }
  return out;
}

class ShmCommunicatorTest : public ::testing::Test {
 protected:
  // Groups use the built-in constants unless a test asks for measuring, with a cache of this
  // test's own.
  void SetUp() override {
    server_ = TcpStoreServer::Start("127.0.0.1", 0).value();
    cache_dir_ = std::filesystem::temp_directory_path() /
                 absl::StrCat("shm-comm-test-", ::getpid(), "-",
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::setenv("COHORT_COMM_CACHE_DIR", cache_dir_.c_str(), 1);
    ::setenv("COHORT_COMM_CALIBRATE", "off", 1);
  }
  void TearDown() override {
    ::unsetenv("COHORT_COMM_CACHE_DIR");
    ::unsetenv("COHORT_COMM_CALIBRATE");
    ::unsetenv("COHORT_SHM_CMA_MIN_BYTES");
    std::filesystem::remove_all(cache_dir_);
  }

  absl::StatusOr<std::unique_ptr<ShmCommunicator>> Make(int rank, int size,
                                                        absl::Duration timeout) {
    Topology t;
    t.rank = t.local_rank = rank;
    t.size = t.local_size = size;
    t.rendezvous_port = server_->port();
    t.collective_timeout = timeout;
    auto rendezvous = Rendezvous::Join(t);
    if (!rendezvous.ok()) return rendezvous.status();
    Group group;
    group.rendezvous = *rendezvous;
    group.prefix = absl::StrCat("test/shm/", generation_);
    group.rank = rank;
    group.size = size;
    group.global_ranks.resize(size);
    std::iota(group.global_ranks.begin(), group.global_ranks.end(), 0);
    return ShmCommunicator::Create(std::move(group), timeout);
  }

  // Runs body(rank, comm) on `size` threads.
  void RunRanks(int size, const std::function<void(int, ShmCommunicator&)>& body) {
    ++generation_;  // a fresh store namespace per group
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        auto comm = Make(r, size, absl::Seconds(30));
        ASSERT_OK(comm);
        body(r, **comm);
      });
    }
    for (auto& t : threads) t.join();
  }

  // Allreduces of one buffer in each size class (3 ranks: rank r contributes (r + 1) * (i % 7))
  // and checks every element.
  static void CheckEverySizeClass(int rank, ShmCommunicator& comm) {
    for (size_t count : {size_t{1000}, size_t{20'000}, size_t{300'001}, size_t{1'100'000}}) {
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i % 7));
      ASSERT_OK(comm.Allreduce(data.data(), count, DataType::kFloat32, ReduceOp::kSum));
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(data[i], static_cast<float>(6 * (i % 7))) << "element " << i << " of " << count;
      }
    }
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::filesystem::path cache_dir_;
  int generation_ = 0;
};

TEST_F(ShmCommunicatorTest, SegmentNameIsGoneOnceEveryRankAttached) {
  RunRanks(3, [](int rank, ShmCommunicator& comm) {
    EXPECT_OK(comm.Barrier());
    EXPECT_TRUE(OurShmEntries().empty());
  });
}

TEST_F(ShmCommunicatorTest, ReduceScatterAndAllgatherSlicesKeepTheSliceContract) {
  ::setenv("COHORT_SHM_SLOT_BYTES", "4096", 1);  // many rounds even for small buffers
  const int n = 3;
  for (size_t count : {size_t{1}, size_t{5}, size_t{4099}, size_t{100003}}) {
    RunRanks(n, [&](int rank, ShmCommunicator& comm) {
      std::vector<int64_t> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = (rank + 1) * static_cast<int64_t>(i);
      ASSERT_OK(comm.ReduceScatter(data.data(), count, DataType::kInt64));
      const size_t begin = ShmCommunicator::SliceBegin(count, n, rank);
      const size_t end = ShmCommunicator::SliceBegin(count, n, rank + 1);
      for (size_t i = begin; i < end; ++i) ASSERT_EQ(data[i], 6 * static_cast<int64_t>(i));
      // Each rank now marks its slice with its own value; allgather spreads the slices.
      for (size_t i = begin; i < end; ++i) data[i] = rank * 1000000 + static_cast<int64_t>(i);
      ASSERT_OK(comm.AllgatherSlices(data.data(), count, DataType::kInt64));
      for (int r = 0; r < n; ++r) {
        for (size_t i = ShmCommunicator::SliceBegin(count, n, r);
             i < ShmCommunicator::SliceBegin(count, n, r + 1); ++i) {
          ASSERT_EQ(data[i], r * 1000000 + static_cast<int64_t>(i)) << "count " << count;
        }
      }
      std::vector<float> f(count, static_cast<float>(rank));
      ASSERT_OK(comm.Allreduce(f.data(), count, DataType::kFloat32, ReduceOp::kAverage));
      for (float v : f) ASSERT_EQ(v, 1.0f);
    });
  }
  ::unsetenv("COHORT_SHM_SLOT_BYTES");
}

TEST_F(ShmCommunicatorTest, GatherOfStringsLongerThanASlot) {
  ::setenv("COHORT_SHM_SLOT_BYTES", "4096", 1);
  RunRanks(2, [](int rank, ShmCommunicator& comm) {
    std::string mine(rank == 0 ? 0 : 10000, static_cast<char>('a' + rank));
    auto all = comm.Allgather(mine);
    ASSERT_OK(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0], "");
    EXPECT_EQ((*all)[1], std::string(10000, 'b'));
    auto gathered = comm.Gather(mine, 1);
    ASSERT_OK(gathered);
    EXPECT_EQ(gathered->size(), rank == 1 ? 2u : 0u);
  });
  ::unsetenv("COHORT_SHM_SLOT_BYTES");
}

TEST_F(ShmCommunicatorTest, MissingRankFailsSetupNamingItAndLeavesNoSegment) {
  auto comm = Make(0, 2, absl::Milliseconds(300));
  ASSERT_THAT(comm, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_TRUE(OurShmEntries().empty());
}

TEST_F(ShmCommunicatorTest, StalledPeerFailsAtTheDeadlineNamingItAndStaysBroken) {
  std::unique_ptr<ShmCommunicator> peer;
  std::thread attach([&] { peer = Make(1, 2, absl::Milliseconds(500)).value(); });
  auto comm = Make(0, 2, absl::Milliseconds(500));
  attach.join();
  ASSERT_OK(comm);
  float x = 1;
  absl::Status s = (*comm)->Allreduce(&x, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_TRUE(absl::StrContains(s.message(), "rank 1")) << s;
  EXPECT_EQ((*comm)->Barrier(), s);
}

// AllreduceAsHalf over shared memory with 3 ranks, in one piece and in pipelined chunks (the
// last one short): values exact in fp16 come back as the exact scaled sum, identical either way.
TEST_F(ShmCommunicatorTest, HalfAllreduceInChunksGivesTheExactScaledSumOfEveryElement) {
  constexpr size_t kCount = 10'007;
  for (size_t chunk : {size_t{1'000}, kHalfAllreduceChunkElements}) {
    RunRanks(3, [&](int rank, ShmCommunicator& comm) {
      std::vector<float> data(kCount);
      for (size_t i = 0; i < kCount; ++i) data[i] = (rank + 1) * 0.25f * static_cast<float>(i % 64);
      std::vector<uint16_t> wire;
      ASSERT_OK(AllreduceAsHalf(comm, data.data(), kCount, 1.0f / 3, &wire, chunk));
      for (size_t i = 0; i < kCount; ++i) {
        // (1 + 2 + 3) * 0.25 * (i % 64) / 3
        ASSERT_FLOAT_EQ(data[i], 0.5f * static_cast<float>(i % 64)) << "element " << i
                                                                     << ", chunk " << chunk;
      }
    });
  }
}

TEST_F(ShmCommunicatorTest, CalibrationAgreesAcrossRanksAndIsCachedForTheNextGroup) {
  ::setenv("COHORT_COMM_CALIBRATE", "auto", 1);
  for (internal::ShmTuningSource want :
       {internal::ShmTuningSource::kMeasured, internal::ShmTuningSource::kCache}) {
    std::vector<internal::ShmTuning> seen(3);
    RunRanks(3, [&](int rank, ShmCommunicator& comm) {
      seen[rank] = comm.tuning();
      CheckEverySizeClass(rank, comm);
    });
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(seen[r].source, want) << "rank " << r;
      EXPECT_EQ(seen[r].classes, seen[0].classes) << "rank " << r;
      EXPECT_EQ(seen[r].wait, seen[0].wait) << "rank " << r;
    }
    // Rank 0's clock decided: only it holds the measurements (one per candidate, each class
    // and the wait policy with exactly one chosen).
    EXPECT_TRUE(seen[1].measurements.empty());
    for (int c = -1; c < internal::kShmSizeClasses; ++c) {
      int candidates = 0, chosen = 0;
      for (const internal::ShmMeasurement& m : seen[0].measurements) {
        if (m.size_class != c) continue;
        ++candidates;
        chosen += m.chosen;
        EXPECT_GT(m.seconds, 0) << m.candidate;
      }
      EXPECT_GE(candidates, 2) << "class " << c;
      EXPECT_EQ(chosen, 1) << "class " << c;
    }
    EXPECT_GT(seen[0].calibration_seconds, 0);
    ASSERT_TRUE(std::filesystem::exists(seen[0].cache_path)) << seen[0].cache_path;
  }
}

// A cache rank 0 reads fixes every rank's paths, here odd ones (4 KiB chunks: many rounds and
// many process_vm_readv calls), and each still sums every element exactly.
TEST_F(ShmCommunicatorTest, EveryRankFollowsRankZerosCacheAndOddChunksStillSumExactly) {
  ::setenv("COHORT_COMM_CALIBRATE", "auto", 1);
  std::map<bool, internal::ShmTuning> planted;
  for (bool cma : {false, true}) {
    internal::ShmMachine machine{3, cma, internal::UsableCores(), 1 << 20};
    internal::ShmTuning t = internal::ConstantShmTuning(machine);
    const internal::ShmPath odd = cma ? internal::ShmPath::kCma : internal::ShmPath::kStaged;
    t.classes = {internal::ShmChoice{odd, 4096}, internal::ShmChoice{internal::ShmPath::kStaged, 4096},
                 internal::ShmChoice{odd, 8192}, internal::ShmChoice{internal::ShmPath::kStaged, 8192}};
    t.wait = {0, 0};
    ASSERT_OK(internal::SaveShmTuning(internal::ShmTuningCacheFor(machine), t));
    planted[cma] = t;
  }
  std::vector<internal::ShmTuning> seen(3);
  RunRanks(3, [&](int rank, ShmCommunicator& comm) {
    seen[rank] = comm.tuning();
    CheckEverySizeClass(rank, comm);
  });
  const bool cma = seen[0].classes[0].path == internal::ShmPath::kCma;
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(seen[r].source, internal::ShmTuningSource::kCache) << "rank " << r;
    EXPECT_EQ(seen[r].classes, planted[cma].classes) << "rank " << r;
    EXPECT_EQ(seen[r].wait, (internal::ShmWait{0, 0})) << "rank " << r;
  }
}

TEST_F(ShmCommunicatorTest, EnvironmentFixesThePathWithoutMeasuringOrCaching) {
  ::setenv("COHORT_COMM_CALIBRATE", "force", 1);  // COHORT_SHM_CMA_MIN_BYTES wins over it
  ::setenv("COHORT_SHM_CMA_MIN_BYTES", "0", 1);
  RunRanks(3, [&](int rank, ShmCommunicator& comm) {
    EXPECT_EQ(comm.tuning().source, internal::ShmTuningSource::kEnvironment);
    for (const internal::ShmChoice& c : comm.tuning().classes) {
      EXPECT_EQ(c.path, internal::ShmPath::kStaged);
    }
    CheckEverySizeClass(rank, comm);
  });
  ::unsetenv("COHORT_SHM_CMA_MIN_BYTES");
  ::setenv("COHORT_COMM_CALIBRATE", "off", 1);
  RunRanks(3, [&](int rank, ShmCommunicator& comm) {
    EXPECT_EQ(comm.tuning().source, internal::ShmTuningSource::kConstants);
    EXPECT_TRUE(comm.tuning().measurements.empty());
  });
  EXPECT_FALSE(std::filesystem::exists(cache_dir_));
}

TEST_F(ShmCommunicatorTest, BadCalibrateSettingOnRankZeroFailsEveryRankNamingIt) {
  ::setenv("COHORT_COMM_CALIBRATE", "sometimes", 1);
  ++generation_;
  std::vector<absl::Status> status(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] { status[r] = Make(r, 3, absl::Seconds(20)).status(); });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(status[0], StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(absl::StrContains(status[0].message(), "COHORT_COMM_CALIBRATE=sometimes"))
      << status[0];
  for (int r = 1; r < 3; ++r) {
    EXPECT_FALSE(status[r].ok()) << "rank " << r;
    EXPECT_TRUE(absl::StrContains(status[r].message(), "COHORT_COMM_CALIBRATE")) << status[r];
  }
}

}  // namespace
}  // namespace cohort::comm
