#include "sampler/nvml_reader.h"

#include <dlfcn.h>

#include "absl/status/status.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::sampler {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

// Holds the fake library open (so its state lasts between loads) and drives its controls.
class FakeNvml {
 public:
  FakeNvml() : handle_(dlopen(COHORT_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL)) {
    EXPECT_NE(handle_, nullptr) << dlerror();
    set_ = reinterpret_cast<void (*)(int, int)>(dlsym(handle_, "FakeNvmlSet"));
    initialized_ = reinterpret_cast<int (*)()>(dlsym(handle_, "FakeNvmlInitialized"));
    Set(/*init_result=*/0, /*failing_device=*/-1);
  }
  ~FakeNvml() {
    Set(0, -1);
    dlclose(handle_);
  }
  void Set(int init_result, int failing_device) { set_(init_result, failing_device); }
  int initialized() const { return initialized_(); }

 private:
  void* handle_;
  void (*set_)(int, int) = nullptr;
  int (*initialized_)() = nullptr;
};

TEST(NvmlReaderTest, WithoutTheLibraryThereAreNoGpusAndNotFoundSaysWhy) {
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load("libno-such-nvml.so.1");
  EXPECT_THAT(nvml,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot load libno-such-nvml.so.1")));
}

TEST(NvmlReaderTest, ThisMachinesNvmlLoadsOrExplainsItsAbsence) {
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load();
  if (!nvml.ok()) {
    EXPECT_THAT(nvml.status().code(),
                testing::AnyOf(absl::StatusCode::kNotFound, absl::StatusCode::kUnavailable));
    return;
  }
  for (const GpuReading& gpu : (*nvml)->Read()) {
    EXPECT_THAT(gpu.uuid, testing::StartsWith("GPU-"));
    EXPECT_GE(gpu.utilization, 0);
    EXPECT_LE(gpu.utilization, 100);
  }
}

TEST(NvmlReaderTest, ALibraryWithoutNvmlsFunctionsIsNotFound) {
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load("libm.so.6");
  EXPECT_THAT(nvml,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("libm.so.6 has no nvmlInit_v2")));
}

TEST(NvmlReaderTest, ReadsEveryGpusUuidUtilizationAndFreeMemory) {
  FakeNvml fake;
  {
    absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load(COHORT_FAKE_NVML_PATH);
    ASSERT_OK(nvml);
    EXPECT_EQ((*nvml)->device_count(), 2);
    const std::vector<GpuReading> gpus = (*nvml)->Read();
    ASSERT_EQ(gpus.size(), 2u);
    EXPECT_EQ(gpus[0].uuid, "GPU-11111111-2222-3333-4444-555555555555");
    EXPECT_EQ(gpus[0].utilization, 37);
    EXPECT_EQ(gpus[0].free_memory, 1ull << 30);
    EXPECT_EQ(gpus[1].uuid, "GPU-66666666-7777-8888-9999-000000000000");
    EXPECT_EQ(gpus[1].utilization, 80);
    EXPECT_EQ(gpus[1].free_memory, 3ull << 30);
    EXPECT_EQ(fake.initialized(), 1);
  }
  EXPECT_EQ(fake.initialized(), 0) << "the reader shuts NVML down";
}

TEST(NvmlReaderTest, AFailingInitIsUnavailableNamingNvmlsError) {
  FakeNvml fake;
  fake.Set(/*init_result=*/9, /*failing_device=*/-1);  // NVML_ERROR_DRIVER_NOT_LOADED
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load(COHORT_FAKE_NVML_PATH);
  EXPECT_THAT(nvml, StatusIs(absl::StatusCode::kUnavailable,
                             HasSubstr("nvmlInit_v2 failed: Driver Not Loaded (9)")));
}

TEST(NvmlReaderTest, AGpuThatCannotBeReadIsLeftOutOfTheReading) {
  FakeNvml fake;
  absl::StatusOr<std::unique_ptr<NvmlReader>> nvml = NvmlReader::Load(COHORT_FAKE_NVML_PATH);
  ASSERT_OK(nvml);
  fake.Set(0, /*failing_device=*/0);
  const std::vector<GpuReading> gpus = (*nvml)->Read();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].uuid, "GPU-66666666-7777-8888-9999-000000000000");
}

}  // namespace
}  // namespace cohort::sampler
