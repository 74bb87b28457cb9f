// WaitForDevice: at once on the CPU; on a GPU (skipped without one) a deadline shorter than the
// queued work is reported, naming what was waited for, and a long one sees the work finish.

#include "runtime/device_wait.h"

#include <torch/torch.h>

#include <string>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using ::cohort::testing_support::StatusIs;

TEST(WaitForDeviceTest, TheCpuIsNeverWaitedFor) {
  EXPECT_OK(WaitForDevice(torch::kCPU, absl::ZeroDuration(), "nothing"));
}

TEST(WaitForDeviceTest, OnAGpuAShortDeadlineIsReportedAndALongOneSeesTheWorkDone) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  const torch::Device gpu(torch::kCUDA, 0);
  torch::Tensor a = torch::randn({8192, 8192}, torch::TensorOptions().device(gpu));
  torch::Tensor b = a;
  for (int i = 0; i < 50; ++i) b = torch::matmul(b, a).div_(8192);  // tens of ms or more
  const absl::Status early = WaitForDevice(gpu, absl::Microseconds(50), "fifty matmuls");
  EXPECT_THAT(early, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_NE(early.message().find("cuda:0 to finish fifty matmuls"), std::string::npos) << early;
  EXPECT_OK(WaitForDevice(gpu, absl::Seconds(120), "fifty matmuls"));
  // The work is done: a read-back no longer waits, and the result is there.
  EXPECT_TRUE(torch::isfinite(b).all().item<bool>());
}

}  // namespace
}  // namespace cohort::runtime
