#include "sampler/proc_counter_source.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::sampler {
namespace {

using ::cohort::testing_support::StatusIs;

namespace fs = std::filesystem;

// A /proc and /sys of fixed files in a temporary directory.
class FakeProc {
 public:
  FakeProc() : root_(fs::path(testing::TempDir()) / "sampler_fake_proc") {
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys_block" / "vda" / "device");
    fs::create_directories(root_ / "sys_block" / "loop0");
    Write("stat", "cpu  300 0 100 600 0 0 0 0 0 0\n");
    Write("meminfo", "MemTotal: 2000 kB\nMemAvailable: 1500 kB\n");
    Write("net_dev",
          "h1\nh2\n    lo: 7 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0\n"
          "  eth0: 100 1 0 0 0 0 0 0 50 1 0 0 0 0 0 0\n");
    Write("diskstats",
          "   7 0 loop0 9 0 9 0 9 0 9 0 0 0 0\n"
          " 254 0 vda 4 0 8 0 2 0 16 0 0 0 0\n"
          " 254 1 vda1 4 0 8 0 2 0 16 0 0 0 0\n");
  }
  ~FakeProc() { fs::remove_all(root_); }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
  }
  ProcCounterSourceOptions Options() const {
    return {.proc_stat = root_ / "stat",
            .proc_meminfo = root_ / "meminfo",
            .proc_net_dev = root_ / "net_dev",
            .proc_diskstats = root_ / "diskstats",
            .sys_block = root_ / "sys_block",
            .nvml_library = ""};
  }

 private:
  fs::path root_;
};

TEST(ProcCounterSourceTest, ReadsEveryPartFromItsFiles) {
  FakeProc proc;
  ProcCounterSource source(proc.Options());
  EXPECT_THAT(source.nvml_status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  const SystemCounters c = source.Read();
  ASSERT_TRUE(c.cpu && c.memory && c.net && c.disk);
  EXPECT_EQ(c.cpu->busy, 400u);
  EXPECT_EQ(c.cpu->total, 1000u);
  EXPECT_EQ(c.memory->available, 1500u * 1024);
  EXPECT_EQ(c.net->received_bytes, 100u);
  EXPECT_EQ(c.net->sent_bytes, 50u);
  EXPECT_EQ(c.disk->reads, 4u) << "only vda: loop0 is virtual, vda1 a partition";
  EXPECT_EQ(c.disk->written_bytes, 16u * 512);
  EXPECT_TRUE(c.gpus.empty());
}

TEST(ProcCounterSourceTest, APartThatFailsIsLeftOutAndComesBack) {
  FakeProc proc;
  ProcCounterSourceOptions options = proc.Options();
  options.net_interfaces = {"lo"};
  ProcCounterSource source(options);
  proc.Write("diskstats", "8 0 vda 1 2\n");
  SystemCounters c = source.Read();
  EXPECT_FALSE(c.disk.has_value());
  ASSERT_TRUE(c.net.has_value());
  EXPECT_EQ(c.net->sent_bytes, 7u);
  EXPECT_FALSE(source.Read().disk.has_value());  // logged once, not again
  proc.Write("diskstats", " 254 0 vda 4 0 8 0 2 0 16 0 0 0 0\n");
  EXPECT_TRUE(source.Read().disk.has_value());
}

TEST(ProcCounterSourceTest, GpusComeFromTheNvmlLibrary) {
  FakeProc proc;
  ProcCounterSourceOptions options = proc.Options();
  options.nvml_library = COHORT_FAKE_NVML_PATH;
  ProcCounterSource source(options);
  EXPECT_OK(source.nvml_status());
  EXPECT_EQ(source.Read().gpus.size(), 2u);
}

TEST(ProcCounterSourceTest, WithoutNvmlThereAreNoGpusAndNoError) {
  FakeProc proc;
  ProcCounterSourceOptions options = proc.Options();
  options.nvml_library = "libno-such-nvml.so.1";
  ProcCounterSource source(options);
  EXPECT_THAT(source.nvml_status(), StatusIs(absl::StatusCode::kNotFound));
  const SystemCounters c = source.Read();
  EXPECT_TRUE(c.gpus.empty());
  EXPECT_TRUE(c.cpu.has_value());
}

TEST(ProcCounterSourceTest, ThisMachinesCountersAreAllThere) {
  ProcCounterSource source;
  const SystemCounters c = source.Read();
  EXPECT_TRUE(c.cpu.has_value());
  EXPECT_TRUE(c.memory.has_value());
  EXPECT_TRUE(c.net.has_value());
  EXPECT_TRUE(c.disk.has_value());
}

}  // namespace
}  // namespace cohort::sampler
