// Data-parallel correctness with real worker processes (tests/runtime/train_worker.cc): N
// workers on b samples each end with the weights of one worker on N*b samples; aggregation,
// compression, autotuning, unused parameters, determinism, and a worker killed mid-step.

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

using testing::BinaryPath;
using testing::Describe;
using testing::NumberAfter;
using testing::WorkerGroup;
using testing::WorkerGroupOptions;
using testing::WorkerResult;

std::vector<float> ReadWeights(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> w(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + w.size() * sizeof(float),
            reinterpret_cast<char*>(w.data()));
  return w;
}

class DataParallelTest : public ::testing::Test {
 protected:
  // Runs `ranks` train_worker processes with `args`; returns rank 0's weights after checking
  // every rank exited 0 and holds bit-identical weights.
  std::vector<float> Train(int ranks, std::vector<std::string> args) {
    const std::string out =
        absl::StrCat(::testing::TempDir(), "/weights_", counter_++, "_", ::getpid());
    std::vector<std::string> argv = {BinaryPath("train_worker"), "--out", out};
    argv.insert(argv.end(), args.begin(), args.end());
    WorkerGroupOptions options;
    options.size = ranks;
    WorkerGroup group(argv, options);
    auto results = group.Wait(absl::Seconds(240));
    for (const auto& r : results) {
      EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(results);
      if (!(r.exited && r.exit_code == 0)) return {};
    }
    last_output_ = results[0].output;
    std::vector<float> w0 = ReadWeights(out + ".rank0.bin");
    EXPECT_GT(w0.size(), 1000u);
    for (int r = 1; r < ranks; ++r) {
      EXPECT_EQ(ReadWeights(absl::StrCat(out, ".rank", r, ".bin")), w0)
          << "rank " << r << "'s replica diverged from rank 0's";
    }
    return w0;
  }
  std::string last_output_;

  // Whether train_worker can train on `gpus` GPUs here (a CUDA build on a machine with them):
  // one worker with --steps 0 and --min-gpus, which exits 4 (NO-GPU) when it cannot.
  bool HaveGpus(int gpus) {
    WorkerGroupOptions options;
    options.size = 1;
    WorkerGroup probe(
        {BinaryPath("train_worker"), "--device", "cuda", "--min-gpus", std::to_string(gpus),
         "--steps", "0", "--out", absl::StrCat(::testing::TempDir(), "/probe_", ::getpid())},
        options);
    auto results = probe.Wait(absl::Seconds(120));
    return results.size() == 1 && results[0].exited && results[0].exit_code == 0;
  }

 private:
  int counter_ = 0;
};

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// ||a - b|| / ||b||.
double RelativeDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

TEST_F(DataParallelTest, TwoAndFourWorkersMatchOneWorkerWithTheWholeBatch) {
  for (int ranks : {2, 4}) {
    const std::string global = std::to_string(8 * ranks);  // b = 8 per worker
    std::vector<float> single = Train(1, {"--global-batch", global, "--steps", "20"});
    // Small buckets, so several travel while backward still runs.
    std::vector<float> multi = Train(ranks, {"--global-batch", global, "--steps", "20",
                                             "--fusion-mb", "0.02", "--first-bucket-mb", "0.005"});
    ASSERT_FALSE(single.empty());
    ASSERT_FALSE(multi.empty());
    EXPECT_LE(MaxAbsDiff(multi, single), 1e-5) << ranks << " workers";
    // The weights moved: a no-op reducer or optimizer could not pass.
    EXPECT_GT(MaxAbsDiff(multi, Train(1, {"--global-batch", global, "--steps", "1"})), 1e-3);
  }
}

// One rank stepping every batch needs no buckets (its gradients stay where autograd puts them);
// aggregation, or a second rank, makes them. The equivalence tests above compare the first with
// the others numerically.
TEST_F(DataParallelTest, OneRankWithoutAggregationTrainsWithoutBuckets) {
  ASSERT_FALSE(Train(1, {"--global-batch", "16", "--steps", "2"}).empty());
  EXPECT_NE(last_output_.find("BUCKETS 0\n"), std::string::npos) << last_output_;
  ASSERT_FALSE(Train(1, {"--global-batch", "16", "--steps", "2", "--aggregation", "2"}).empty());
  EXPECT_EQ(last_output_.find("BUCKETS 0\n"), std::string::npos) << last_output_;
  EXPECT_NE(last_output_.find("BUCKETS "), std::string::npos) << last_output_;
  ASSERT_FALSE(Train(2, {"--global-batch", "16", "--steps", "2"}).empty());
  EXPECT_EQ(last_output_.find("BUCKETS 0\n"), std::string::npos) << last_output_;
}

TEST_F(DataParallelTest, AggregationFrequencyFourOnTwoWorkersMatchesOneWorkerWithEightTimesTheBatch) {
  std::vector<float> single = Train(1, {"--global-batch", "64", "--steps", "20"});
  std::vector<float> aggregated =
      Train(2, {"--global-batch", "16", "--aggregation", "4", "--steps", "20"});
  EXPECT_LE(MaxAbsDiff(aggregated, single), 1e-5);
}

TEST_F(DataParallelTest, Fp16CompressionStaysWithinOneThousandthOfTheUncompressedRun) {
  std::vector<float> plain = Train(2, {"--global-batch", "16", "--steps", "20"});
  std::vector<float> compressed =
      Train(2, {"--global-batch", "16", "--steps", "20", "--compression"});
  const double rel = RelativeDiff(compressed, plain);
  std::printf("fp16 compression after 20 steps: ||w16 - w32|| / ||w32|| = %g\n", rel);
  EXPECT_LE(rel, 1e-3);
  EXPECT_GT(rel, 0) << "compression changed nothing: were gradients really sent as fp16?";
}

// On a GPU (the GPU build, a machine with one; skipped elsewhere): buckets in device memory,
// reduced through NCCL on its own stream after the backward pass's kernels. One rank with
// aggregation 2 takes that whole path (two passes accumulate, one NCCL allreduce of one rank,
// the 1/2 scale on the device) and must match one pass on twice the batch; cuDNN's backward
// sums in a different order for another batch size, hence a tolerance.
TEST_F(DataParallelTest, OnAGpuAggregationTwoMatchesOnePassOnTwiceTheBatch) {
  if (!HaveGpus(1)) GTEST_SKIP() << "no GPU for train_worker --device cuda here";
  std::vector<float> single =
      Train(1, {"--device", "cuda", "--global-batch", "32", "--steps", "10"});
  std::vector<float> aggregated =
      Train(1, {"--device", "cuda", "--global-batch", "16", "--aggregation", "2", "--steps", "10"});
  EXPECT_EQ(last_output_.find("BUCKETS 0\n"), std::string::npos) << last_output_;
  ASSERT_FALSE(single.empty());
  ASSERT_FALSE(aggregated.empty());
  EXPECT_LE(MaxAbsDiff(aggregated, single), 1e-4);
  // And the CPU's run of the same: the same training, to within the two devices' rounding.
  EXPECT_LE(MaxAbsDiff(single, Train(1, {"--global-batch", "32", "--steps", "10"})), 1e-3);
  std::vector<float> compressed =
      Train(1, {"--device", "cuda", "--global-batch", "16", "--aggregation", "2", "--steps", "10",
                "--compression"});
  const double rel = RelativeDiff(compressed, aggregated);
  std::printf("fp16 compression on the GPU after 10 steps: ||w16 - w32|| / ||w32|| = %g\n", rel);
  EXPECT_LE(rel, 1e-3);
  EXPECT_GT(rel, 0) << "compression changed nothing: were the buckets really sent as fp16?";
}

// Two GPUs (skipped on machines with fewer): two workers on b samples each match one on 2b.
TEST_F(DataParallelTest, TwoGpusMatchOneGpuWithTheWholeBatch) {
  if (!HaveGpus(2)) GTEST_SKIP() << "fewer than 2 GPUs for train_worker --device cuda here";
  std::vector<float> single =
      Train(1, {"--device", "cuda", "--global-batch", "32", "--steps", "10"});
  std::vector<float> multi =
      Train(2, {"--device", "cuda", "--global-batch", "32", "--steps", "10", "--fusion-mb", "0.02",
                "--first-bucket-mb", "0.005", "--min-gpus", "2"});
  ASSERT_FALSE(single.empty());
  ASSERT_FALSE(multi.empty());
  EXPECT_LE(MaxAbsDiff(multi, single), 1e-4);
}

TEST_F(DataParallelTest, TwoIdenticalRunsGiveBitIdenticalWeights) {
  std::vector<float> a = Train(2, {"--global-batch", "16", "--steps", "10"});
  std::vector<float> b = Train(2, {"--global-batch", "16", "--steps", "10"});
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(DataParallelTest, MetricsAreAveragedAcrossWorkersPlainAndWeighted) {
  Train(3, {"--global-batch", "24", "--steps", "1"});
  // Rank r reports r + 1 with weight r + 1: mean 2, weighted (1 + 4 + 9) / 6.
  EXPECT_NE(last_output_.find("METRICS mean 2.000000 weighted 2.333333"), std::string::npos)
      << last_output_;
}

TEST_F(DataParallelTest, AutotunedAndFixedFusionSizesGiveTheSameWeights) {
  // The model has ~19k parameters (76 KB): candidates from one bucket per tensor to one bucket.
  std::vector<float> tuned = Train(2, {"--global-batch", "16", "--steps", "24", "--auto-tune",
                                       "--candidates-mb", "0,0.01,0.03,1"});
  EXPECT_NE(last_output_.find("auto_tune_tensor_fusion:"), std::string::npos) << last_output_;
  EXPECT_NE(last_output_.find("-> chose"), std::string::npos) << last_output_;
  std::vector<float> fixed = Train(2, {"--global-batch", "16", "--steps", "24"});
  // The shared-memory sum adds ranks in rank order for every element whatever the bucket
  // layout, so the layout cannot change the result at all; 1e-6 leaves room for transports
  // whose reduction order depends on the element's position (Gloo's ring).
  EXPECT_LE(MaxAbsDiff(tuned, fixed), 1e-6);
}

TEST_F(DataParallelTest, UnusedParametersCountAsZerosAndNeverHang) {
  std::vector<float> initial = Train(2, {"--global-batch", "16", "--steps", "0", "--unused-layer"});
  std::vector<float> trained = Train(2, {"--global-batch", "16", "--steps", "5", "--unused-layer"});
  ASSERT_EQ(initial.size(), trained.size());
  // The unused layer (10x10 weight + 10 bias) is registered last: it must not have moved.
  const size_t unused = 110;
  std::vector<float> a(initial.end() - unused, initial.end()), b(trained.end() - unused, trained.end());
  EXPECT_EQ(a, b);
  EXPECT_GT(MaxAbsDiff(initial, trained), 1e-3);
}

TEST_F(DataParallelTest, UnusedParametersFailClearlyWhenTheUserAsksForIt) {
  WorkerGroupOptions options;
  options.size = 2;
  WorkerGroup group({BinaryPath("train_worker"), "--out", ::testing::TempDir() + "/unused",
                     "--global-batch", "16", "--steps", "2", "--unused-layer",
                     "--error-on-unused"},
                    options);
  auto results = group.Wait(absl::Seconds(60));
  for (const auto& r : results) {
    ASSERT_TRUE(r.exited) << Describe(results);
    EXPECT_EQ(r.exit_code, 3) << Describe(results);
    EXPECT_NE(r.output.find("unused.weight"), std::string::npos) << Describe(results);
  }
}

TEST_F(DataParallelTest, WorkerKilledMidStepFailsTheSurvivorsWithinTenSecondsNamingIt) {
  const int victim = 1;
  WorkerGroupOptions options;
  options.size = 3;
  WorkerGroup group({BinaryPath("train_worker"), "--out", ::testing::TempDir() + "/killed",
                     "--global-batch", "24", "--steps", "50", "--die-rank",
                     std::to_string(victim), "--die-step", "3"},
                    options);
  auto results = group.Wait(absl::Seconds(60));
  const double died_at = NumberAfter(results[victim].output, "VICTIM dying at ");
  ASSERT_GT(died_at, 0) << Describe(results);
  EXPECT_EQ(results[victim].signal, SIGKILL) << Describe(results);
  for (const auto& r : results) {
    if (r.rank == victim) continue;
    ASSERT_TRUE(r.exited) << "rank " << r.rank << " hung\n" << Describe(results);
    EXPECT_EQ(r.exit_code, 3) << Describe(results);
    const double failed_at = NumberAfter(r.output, "FAILED-AS-EXPECTED at ");
    ASSERT_GT(failed_at, 0) << Describe(results);
    EXPECT_LT(failed_at - died_at, 10) << Describe(results);
    EXPECT_NE(r.output.find("rank 1"), std::string::npos) << Describe(results);
  }
}

}  // namespace
}  // namespace cohort
