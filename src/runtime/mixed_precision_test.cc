// GradScaler's arithmetic and its decisions (CPU gradients here; CUDA ones take LibTorch's fused
// kernel, checked in the GPU case), and CudaAutocast on a GPU (skipped without one).

#include "runtime/mixed_precision.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using ::cohort::testing_support::StatusIs;

struct Params {
  explicit Params(torch::Device device = torch::kCPU)
      : a(torch::ones({4}, torch::TensorOptions().device(device)).requires_grad_(true)),
        b(torch::ones({2, 3}, torch::TensorOptions().device(device)).requires_grad_(true)),
        sgd({a, b}, torch::optim::SGDOptions(0.1)) {}
  void SetGrads(double ga, double gb) {
    a.mutable_grad() = torch::full_like(a, ga).detach();
    b.mutable_grad() = torch::full_like(b, gb).detach();
  }
  torch::Tensor a, b;
  torch::optim::SGD sgd;
};

TEST(GradScalerTest, ScalesTheLossAndUnscalesEveryGradient) {
  GradScaler scaler({.init_scale = 1024});
  EXPECT_EQ(scaler.Scale(torch::full({}, 0.5)).item<double>(), 512.0);
  Params p;
  p.SetGrads(2048, -512);
  EXPECT_TRUE(scaler.UnscaleGradients(p.sgd));
  EXPECT_TRUE(torch::equal(p.a.grad(), torch::full_like(p.a, 2.0)));
  EXPECT_TRUE(torch::equal(p.b.grad(), torch::full_like(p.b, -0.5)));
}

TEST(GradScalerTest, AnInfOrNanGradientSkipsTheStepAndHalvesTheScale) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    GradScaler scaler({.init_scale = 1024});
    Params p;
    p.SetGrads(1, bad);
    const bool finite = scaler.UnscaleGradients(p.sgd);
    EXPECT_FALSE(finite) << bad;
    scaler.Update(finite);
    EXPECT_EQ(scaler.scale(), 512.0);
    EXPECT_EQ(scaler.skipped_steps(), 1);
  }
}

TEST(GradScalerTest, TheScaleGrowsAfterGrowthIntervalFiniteStepsInARow) {
  GradScaler scaler({.init_scale = 8, .growth_interval = 3});
  scaler.Update(true);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 8.0);
  scaler.Update(false);  // an overflow restarts the count
  EXPECT_EQ(scaler.scale(), 4.0);
  scaler.Update(true);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 4.0);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(GradScalerTest, ACheckpointedScalerGoesOnWhereItStopped) {
  GradScaler scaler({.init_scale = 8, .growth_interval = 3});
  scaler.Update(false);  // 4
  scaler.Update(true);
  scaler.Update(true);  // one finite step short of growing
  const nlohmann::json saved = nlohmann::json::parse(scaler.ToJson().dump());
  GradScaler resumed({.init_scale = 8, .growth_interval = 3});
  ASSERT_OK(resumed.FromJson(saved));
  EXPECT_EQ(resumed.scale(), 4.0);
  resumed.Update(true);
  EXPECT_EQ(resumed.scale(), 8.0);  // the step that grows it is the same one as without a restart
}

TEST(GradScalerTest, ABadCheckpointedStateIsRefusedByFieldAndLeavesTheScalerAlone) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"([])", "grad_scaler.scale"},
      {R"({"growth_tracker": 1})", "grad_scaler.scale"},
      {R"({"scale": 0, "growth_tracker": 1})", "grad_scaler.scale"},
      {R"({"scale": -2, "growth_tracker": 1})", "grad_scaler.scale"},
      {R"({"scale": "big", "growth_tracker": 1})", "grad_scaler.scale"},
      {R"({"scale": null, "growth_tracker": 1})", "grad_scaler.scale"},
      {R"({"scale": 4})", "grad_scaler.growth_tracker"},
      {R"({"scale": 4, "growth_tracker": -1})", "grad_scaler.growth_tracker"},
      {R"({"scale": 4, "growth_tracker": 3})", "grad_scaler.growth_tracker"},
      {R"({"scale": 4, "growth_tracker": 1.5})", "grad_scaler.growth_tracker"},
  };
  for (const auto& [text, field] : bad) {
    GradScaler scaler({.init_scale = 8, .growth_interval = 3});
    const absl::Status status = scaler.FromJson(nlohmann::json::parse(text));
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument)) << text;
    EXPECT_NE(status.message().find(field), std::string::npos) << text << ": " << status;
    EXPECT_EQ(scaler.scale(), 8.0) << text;
  }
}

TEST(MixedPrecisionGpuTest, AutocastRunsMatmulsInFp16AndTheScalerUnscalesOnTheDevice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  torch::nn::Linear linear(8, 4);
  linear->to(torch::kCUDA);
  torch::Tensor x = torch::randn({2, 8}, torch::kCUDA);
  {
    CudaAutocast autocast(true);
    EXPECT_EQ(linear->forward(x).scalar_type(), torch::kHalf);
    {
      CudaAutocast nested(true);
      EXPECT_EQ(linear->forward(x).scalar_type(), torch::kHalf);
    }
    EXPECT_EQ(linear->forward(x).scalar_type(), torch::kHalf);  // the inner scope restored it
  }
  EXPECT_EQ(linear->forward(x).scalar_type(), torch::kFloat32);
  {
    CudaAutocast off(false);
    EXPECT_EQ(linear->forward(x).scalar_type(), torch::kFloat32);
  }
  GradScaler scaler({.init_scale = 1024});
  Params p(torch::kCUDA);
  p.SetGrads(2048, -512);
  EXPECT_TRUE(scaler.UnscaleGradients(p.sgd));
  EXPECT_TRUE(torch::equal(p.a.grad().cpu(), torch::full({4}, 2.0)));
  p.SetGrads(1, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(scaler.UnscaleGradients(p.sgd));
}

}  // namespace
}  // namespace cohort::runtime
