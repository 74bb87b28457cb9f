#include "sampler/proc_counters.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/internal/loopback_traffic.h"

namespace cohort::sampler {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

// Real files (Linux 6.x, 2 CPUs), cut short.
constexpr char kStat[] = R"(cpu  327549 12 50744 101943 1054 0 326 234 5 0
cpu0 162382 0 23703 54330 312 0 81 116 0 0
cpu1 165167 12 27040 47612 742 0 245 117 5 0
intr 22467823 0 9 0 0 0 0 0 0 0 0
ctxt 50218234
btime 1763943711
)";

constexpr char kMeminfo[] = R"(MemTotal:       24684092 kB
MemFree:        23104484 kB
MemAvailable:   24236436 kB
Buffers:           14348 kB
Cached:          1258848 kB
SwapCached:            0 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
)";

constexpr char kNetDev[] =
    R"(Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 6123120439  268570    0    0    0     0          0         0 6123120439  268570    0    0    0     0       0          0
  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0: 100540559    1906    0    0    0     0          0         0    78318    1046    0    0    0     0       0          0
  eth1:     1000      10    0    0    0     0          0         0      500       5    0    0    0     0       0          0
)";

constexpr char kDiskstats[] = R"(   7       0 loop0 12 0 30 1 0 0 0 0 0 4 1 0 0 0 0 0 0
 254       0 vda 153058 11592 9209562 168516 59695 41275 38477736 137923 0 34828 320259 142526 37 29219088 13623 5565 196
 254       1 vda1 150000 11000 9000000 160000 59000 41000 38000000 130000 0 34000 310000 0 0 0 0 0 0
 259       0 nvme0n1 100 0 800 10 50 0 400 5 0 12 15
 259       1 nvme0n1p1 90 0 700 9 40 0 300 4 0 11 13
)";

TEST(ProcStatTest, BusyIsEverythingButIdleAndIowaitOfTheCpuLine) {
  absl::StatusOr<CpuTimes> times = ParseProcStat(kStat);
  ASSERT_OK(times);
  // guest (5) and guest_nice are already in user and nice.
  EXPECT_EQ(times->total, 327549u + 12 + 50744 + 101943 + 1054 + 0 + 326 + 234);
  EXPECT_EQ(times->busy, times->total - 101943 - 1054);
}

TEST(ProcStatTest, OldKernelsWithFourFieldsParse) {
  absl::StatusOr<CpuTimes> times = ParseProcStat("cpu 10 0 5 85\n");
  ASSERT_OK(times);
  EXPECT_EQ(times->total, 100u);
  EXPECT_EQ(times->busy, 15u);
}

TEST(ProcStatTest, ErrorsNameTheFileAndLine) {
  EXPECT_THAT(ParseProcStat("intr 1\ncpu 1 2 x 4\n").status().message(),
              HasSubstr("/proc/stat line 2: 'x' is not a counter"));
  EXPECT_THAT(ParseProcStat("intr 1\ncpu 1 2\n").status().message(),
              HasSubstr("/proc/stat line 2: expected at least 4 counters after 'cpu', got 2"));
  EXPECT_THAT(ParseProcStat("cpu0 1 2 3 4\n"), StatusIs(absl::StatusCode::kNotFound));
}

TEST(MeminfoTest, ReadsTotalAndAvailableInBytes) {
  absl::StatusOr<MemoryInfo> info = ParseMeminfo(kMeminfo);
  ASSERT_OK(info);
  EXPECT_EQ(info->total, 24684092ull * 1024);
  EXPECT_EQ(info->available, 24236436ull * 1024);
}

TEST(MeminfoTest, KernelsWithoutMemAvailableUseFreeBuffersAndCached) {
  absl::StatusOr<MemoryInfo> info =
      ParseMeminfo("MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 2 kB\nCached: 30 kB\n");
  ASSERT_OK(info);
  EXPECT_EQ(info->available, 42u * 1024);
}

TEST(MeminfoTest, MissingOrBadFieldsAreErrors) {
  EXPECT_THAT(ParseMeminfo("MemFree: 1 kB\n"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(ParseMeminfo("MemTotal: 1 kB\n"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(ParseMeminfo("MemTotal: 1 kB\nMemAvailable: lots kB\n").status().message(),
              HasSubstr("/proc/meminfo line 2: 'lots' is not a counter"));
}

TEST(NetDevTest, SumsEveryInterfaceButLoopbackByDefault) {
  absl::StatusOr<NetCounters> net = ParseNetDev(kNetDev, {});
  ASSERT_OK(net);
  EXPECT_EQ(net->received_bytes, 100540559u + 1000);
  EXPECT_EQ(net->sent_bytes, 78318u + 500);
}

TEST(NetDevTest, ChosenInterfacesIncludingLoopback) {
  absl::StatusOr<NetCounters> net = ParseNetDev(kNetDev, {"lo", "eth1"});
  ASSERT_OK(net);
  EXPECT_EQ(net->received_bytes, 6123120439u + 1000);
  EXPECT_EQ(net->sent_bytes, 6123120439u + 500);
}

TEST(NetDevTest, AnAbsentInterfaceIsNotFoundAndNamesThoseThere) {
  absl::Status status = ParseNetDev(kNetDev, {"ib0"}).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound,
                               HasSubstr("no interface 'ib0' (it has lo, ifb0, eth0, eth1)")));
}

TEST(NetDevTest, AShortLineNamesTheFileAndLine) {
  EXPECT_THAT(ParseNetDev("h1\nh2\n eth0: 1 2 3\n", {}).status().message(),
              HasSubstr("/proc/net/dev line 3: expected at least 16 counters after 'eth0:'"));
}

TEST(DiskstatsTest, SumsTheChosenDisksIn512ByteSectors) {
  absl::StatusOr<DiskCounters> disk = ParseDiskstats(
      kDiskstats, [](absl::string_view name) { return name == "vda" || name == "nvme0n1"; });
  ASSERT_OK(disk);
  EXPECT_EQ(disk->reads, 153058u + 100);
  EXPECT_EQ(disk->writes, 59695u + 50);
  EXPECT_EQ(disk->read_bytes, (uint64_t{9209562} + 800) * 512);
  EXPECT_EQ(disk->written_bytes, (uint64_t{38477736} + 400) * 512);
}

TEST(DiskstatsTest, ErrorsNameTheFileAndLine) {
  auto all = [](absl::string_view) { return true; };
  EXPECT_THAT(ParseDiskstats("8 0 sda 1 2 3\n", all).status().message(),
              HasSubstr("/proc/diskstats line 1: expected at least 11 counters after '8 0 sda'"));
  EXPECT_THAT(ParseDiskstats("\n8 0\n", all).status().message(),
              HasSubstr("/proc/diskstats line 2: expected 'major minor name ...'"));
}

TEST(ReadersTest, ReadThisMachinesFiles) {
  absl::StatusOr<CpuTimes> cpu = ReadCpuTimes();
  ASSERT_OK(cpu);
  EXPECT_GT(cpu->total, 0u);
  EXPECT_LE(cpu->busy, cpu->total);
  absl::StatusOr<MemoryInfo> memory = ReadMemoryInfo();
  ASSERT_OK(memory);
  EXPECT_GT(memory->available, 0u);
  EXPECT_LE(memory->available, memory->total);
  EXPECT_OK(ReadNetCounters({}));
  absl::StatusOr<std::vector<std::string>> disks = ListPhysicalDisks();
  ASSERT_OK(disks);
  for (const std::string& disk : *disks) EXPECT_EQ(disk.find("loop"), std::string::npos) << disk;
  absl::StatusOr<DiskCounters> disk = ReadDiskCounters();
  ASSERT_OK(disk);
}

TEST(ReadersTest, AMissingFileIsAnErrorNamingIt) {
  absl::Status status = ReadCpuTimes("/proc/no-such-file").status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound, HasSubstr("/proc/no-such-file")));
  EXPECT_THAT(ListPhysicalDisks("/no/sys/block").status().message(), HasSubstr("/no/sys/block"));
}

TEST(ReadersTest, LoopbackCountersGrowByWhatIsSentOverIt) {
  absl::StatusOr<NetCounters> before = ReadNetCounters({"lo"});
  ASSERT_OK(before);
  constexpr size_t kBytes = 1 << 20;
  internal::SendOverLoopback(kBytes);
  absl::StatusOr<NetCounters> after = ReadNetCounters({"lo"});
  ASSERT_OK(after);
  EXPECT_GE(after->sent_bytes - before->sent_bytes, kBytes);
  EXPECT_GE(after->received_bytes - before->received_bytes, kBytes);
}

}  // namespace
}  // namespace cohort::sampler
