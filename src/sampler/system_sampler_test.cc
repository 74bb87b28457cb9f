#include "sampler/system_sampler.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/internal/loopback_traffic.h"
#include "sampler/proc_counter_source.h"

namespace cohort::sampler {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::DoubleEq;

// How long a test waits for the sampler's thread before it fails (real time).
constexpr absl::Duration kPatience = absl::Seconds(10);

// What the sampler's thread did, for the test's thread to wait on. std::mutex rather than
// absl::Mutex so that ThreadSanitizer sees the synchronization (Debian's Abseil is not built
// for it).
class Observed {
 public:
  void Read(absl::Time time) {
    std::lock_guard<std::mutex> lock(mu_);
    read_times_.push_back(time);
    changed_.notify_all();
  }
  void Emit(const SystemMetrics& metrics) {
    std::lock_guard<std::mutex> lock(mu_);
    emitted_.push_back(metrics);
    changed_.notify_all();
  }
  // Whether `reads` reads happened within kPatience.
  bool WaitForReads(size_t reads) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, absl::ToChronoSeconds(kPatience),
                             [&] { return read_times_.size() >= reads; });
  }
  // Whether `count` records were emitted within kPatience.
  bool WaitForRecords(size_t count) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, absl::ToChronoSeconds(kPatience),
                             [&] { return emitted_.size() >= count; });
  }
  std::vector<absl::Time> read_times() {
    std::lock_guard<std::mutex> lock(mu_);
    return read_times_;
  }
  std::vector<SystemMetrics> emitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return emitted_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<absl::Time> read_times_;  // guarded by mu_
  std::vector<SystemMetrics> emitted_;  // guarded by mu_
};

// Counters of a machine sending 1000 bytes per second of `clock`'s time.
class ScriptedSource : public CounterSource {
 public:
  ScriptedSource(const Clock& clock, Observed* observed) : clock_(clock), observed_(observed) {}
  SystemCounters Read() override {
    const absl::Time now = clock_.Now();
    const double t = absl::ToDoubleSeconds(now - absl::FromUnixSeconds(1000000000));
    SystemCounters c;
    c.cpu =
        CpuTimes{.busy = static_cast<uint64_t>(t * 30), .total = static_cast<uint64_t>(t * 100)};
    c.net = NetCounters{.sent_bytes = static_cast<uint64_t>(t * 1000)};
    observed_->Read(now);
    return c;
  }

 private:
  const Clock& clock_;
  Observed* observed_;
};

SystemSampler::Callback EmitTo(Observed* observed) {
  return [observed](const SystemMetrics& metrics) { observed->Emit(metrics); };
}

TEST(SystemSamplerTest, SamplesEveryIntervalAndEmitsOneRecordPerPeriod) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Observed observed;
  SystemSampler sampler({}, std::make_unique<ScriptedSource>(clock, &observed), clock,
                        EmitTo(&observed));
  ASSERT_OK(sampler.Start());
  ASSERT_TRUE(observed.WaitForReads(1));
  for (size_t i = 1; i <= 10; ++i) {
    EXPECT_TRUE(observed.emitted().empty()) << i;
    clock.Advance(absl::Milliseconds(100));
    ASSERT_TRUE(observed.WaitForReads(i + 1)) << i;
  }
  ASSERT_TRUE(observed.WaitForRecords(1));
  const SystemMetrics first = observed.emitted()[0];
  EXPECT_EQ(first.time, start + absl::Seconds(1));
  EXPECT_THAT(first.metrics.at(kNetThroughputSent), DoubleEq(1000));
  EXPECT_THAT(first.metrics.at(kCpuUtilSimple), DoubleEq(30));
}

TEST(SystemSamplerTest, StopEndsTheWaitAtOnceAndEmitsThePartialPeriod) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Observed observed;
  SystemSampler sampler({}, std::make_unique<ScriptedSource>(clock, &observed), clock,
                        EmitTo(&observed));
  ASSERT_OK(sampler.Start());
  ASSERT_TRUE(observed.WaitForReads(1));
  for (size_t i = 1; i <= 3; ++i) {
    clock.Advance(absl::Milliseconds(100));
    ASSERT_TRUE(observed.WaitForReads(i + 1));
  }
  const absl::Time stop_called = absl::Now();
  sampler.Stop();  // the fake clock never reaches the next sample
  EXPECT_LT(absl::Now() - stop_called, absl::Seconds(1));
  const std::vector<SystemMetrics> emitted = observed.emitted();
  ASSERT_EQ(emitted.size(), 1u);
  EXPECT_EQ(emitted[0].time, start + absl::Milliseconds(300));
  EXPECT_THAT(emitted[0].metrics.at(kNetThroughputSent), DoubleEq(1000));
  sampler.Stop();  // again: nothing
}

TEST(SystemSamplerTest, SamplesMissedBecauseTheSourceWasLateAreSkipped) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Observed observed;
  SystemSampler sampler({}, std::make_unique<ScriptedSource>(clock, &observed), clock,
                        EmitTo(&observed));
  ASSERT_OK(sampler.Start());
  ASSERT_TRUE(observed.WaitForReads(1));
  clock.Advance(absl::Milliseconds(350));  // three samples due: one is taken
  ASSERT_TRUE(observed.WaitForReads(2));
  clock.Advance(absl::Milliseconds(99));  // the next is due 100 ms after the late one
  // Not synchronization: time for a wrong early sample at 0.449 s to show (the fake clock's
  // sleeper looks every millisecond); a right sampler takes none.
  absl::SleepFor(absl::Milliseconds(20));
  clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(observed.WaitForReads(3));
  sampler.Stop();
  const std::vector<absl::Time> times = observed.read_times();
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[1], start + absl::Milliseconds(350));
  EXPECT_EQ(times[2], start + absl::Milliseconds(450));
  EXPECT_EQ(observed.emitted().size(), 1u);  // Stop's flush
}

TEST(SystemSamplerTest, BadOptionsAndASecondStartAreRefused) {
  FakeClock clock;
  Observed observed;
  auto make = [&](SystemSamplerOptions options) {
    return std::make_unique<SystemSampler>(
        options, std::make_unique<ScriptedSource>(clock, &observed), clock, EmitTo(&observed));
  };
  EXPECT_THAT(make({.interval = absl::ZeroDuration()})->Start(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(make({.interval = absl::Seconds(2)})->Start(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::unique_ptr<SystemSampler> sampler = make({});
  ASSERT_OK(sampler->Start());
  EXPECT_THAT(sampler->Start(), StatusIs(absl::StatusCode::kFailedPrecondition));
}

// This machine's real counters, for about half a second.
TEST(SystemSamplerTest, ThisMachinesSeriesArePlausible) {
  absl::StatusOr<MemoryInfo> memory = ReadMemoryInfo();
  ASSERT_OK(memory);
  Observed observed;
  SystemSampler sampler(
      {.interval = absl::Milliseconds(50), .period = absl::Milliseconds(200)},
      std::make_unique<ProcCounterSource>(ProcCounterSourceOptions{.net_interfaces = {"lo"}}),
      RealClock(), EmitTo(&observed));
  ASSERT_OK(sampler.Start());
  ASSERT_TRUE(observed.WaitForRecords(1));
  constexpr size_t kBytes = 1 << 20;
  internal::SendOverLoopback(kBytes);
  const size_t records = observed.emitted().size();
  // The second record from now is of samples all taken after the bytes went.
  ASSERT_TRUE(observed.WaitForRecords(records + 2));
  sampler.Stop();
  const std::vector<SystemMetrics> emitted = observed.emitted();
  const double cores = std::thread::hardware_concurrency();
  double sent = 0, received = 0;  // bytes, from the rates and the time each record covers
  for (size_t i = 0; i < emitted.size(); ++i) {
    const std::map<std::string, double>& m = emitted[i].metrics;
    for (const char* name : {kCpuUtilSimple, kMemoryFree, kNetThroughputSent, kNetThroughputRecv,
                             kDiskIops, kDiskThroughputRead, kDiskThroughputWrite}) {
      ASSERT_EQ(m.count(name), 1u) << "record " << i << " lacks " << name;
      EXPECT_GE(m.at(name), 0) << name;
    }
    EXPECT_LE(m.at(kCpuUtilSimple), 100 * cores);
    EXPECT_LE(m.at(kMemoryFree), memory->total);
    if (i == 0) continue;
    const double seconds = absl::ToDoubleSeconds(emitted[i].time - emitted[i - 1].time);
    sent += m.at(kNetThroughputSent) * seconds;
    received += m.at(kNetThroughputRecv) * seconds;
  }
  EXPECT_GE(sent, 0.99 * kBytes);
  EXPECT_GE(received, 0.99 * kBytes);
}

}  // namespace
}  // namespace cohort::sampler
