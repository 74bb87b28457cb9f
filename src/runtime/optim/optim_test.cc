// Single steps of LAMB, LARS and RAdam checked against their published update rules, computed here
// independently in double precision on small tensors; state save/load; linear warm-up; FusedSGD
// bit for bit against LibTorch's SGD.

#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "cohort/optim/fused_sgd.h"
#include "cohort/optim/lamb.h"
#include "cohort/optim/lars.h"
#include "cohort/optim/lr_warmup.h"
#include "cohort/optim/radam.h"
#include "gtest/gtest.h"

namespace cohort::runtime::optim {
namespace {

using Vec = std::vector<double>;

double Norm(const Vec& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

torch::Tensor ToTensor(const Vec& v) {
  return torch::tensor(std::vector<float>(v.begin(), v.end())).reshape({2, 2});
}

void ExpectNear(const torch::Tensor& t, const Vec& expected, double tol) {
  torch::Tensor flat = t.detach().reshape({-1}).to(torch::kFloat64);
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(flat[i].item<double>(), expected[i], tol) << "element " << i;
  }
}

const Vec kW = {1.0, -2.0, 3.0, 0.5};
const Vec kG1 = {0.1, 0.2, -0.3, 0.05};
const Vec kG2 = {-0.05, 0.4, 0.1, 0.0};

TEST(LambTest, TwoStepsFollowTheLambUpdateRule) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-6, wd = 0.01;
  torch::Tensor w = ToTensor(kW).requires_grad_(true);
  Lamb lamb({w}, LambOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
  Vec ref = kW, m(4, 0), v(4, 0);
  int t = 0;
  for (const Vec& g : {kG1, kG2}) {
    w.mutable_grad() = ToTensor(g);
    lamb.step();
    ++t;
    Vec r(4);
    for (int i = 0; i < 4; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      r[i] = mhat / (std::sqrt(vhat) + eps) + wd * ref[i];
    }
    const double trust = Norm(ref) / Norm(r);
    for (int i = 0; i < 4; ++i) ref[i] -= lr * trust * r[i];
    ExpectNear(w, ref, 1e-6);
  }
  // The trust ratio matters: a plain Adam-style step would have moved w by about lr per element.
  EXPECT_GT(std::fabs(ref[0] - kW[0]), 0.015);
}

TEST(LarsTest, TwoStepsFollowTheLarsUpdateRule) {
  const double lr = 0.1, momentum = 0.9, wd = 5e-4, eta = 0.001;
  torch::Tensor w = ToTensor(kW).requires_grad_(true);
  Lars lars({w}, LarsOptions(lr).momentum(momentum).weight_decay(wd).trust_coefficient(eta));
  Vec ref = kW, buf(4, 0);
  bool first = true;
  for (const Vec& g : {kG1, kG2}) {
    w.mutable_grad() = ToTensor(g);
    lars.step();
    const double local_lr = eta * Norm(ref) / (Norm(g) + wd * Norm(ref));
    for (int i = 0; i < 4; ++i) {
      const double update = lr * local_lr * (g[i] + wd * ref[i]);
      buf[i] = first ? update : momentum * buf[i] + update;
    }
    for (int i = 0; i < 4; ++i) ref[i] -= buf[i];
    first = false;
    ExpectNear(w, ref, 1e-6);  // fp32 weights near 2: one ulp is 2.4e-7
  }
}

TEST(LarsTest, ZeroGradientLeavesTheWeightsAlone) {
  torch::Tensor w = ToTensor(kW).requires_grad_(true);
  Lars lars({w}, LarsOptions(0.1));
  w.mutable_grad() = torch::zeros({2, 2});
  lars.step();
  ExpectNear(w, kW, 0);
}

template <typename Opt, typename Options>
void ExpectSaveLoadResumesIdentically(Options options) {
  torch::Tensor a = ToTensor(kW).requires_grad_(true);
  torch::Tensor b = ToTensor(kW).requires_grad_(true);
  Opt first({a}, options);
  a.mutable_grad() = ToTensor(kG1);
  first.step();
  std::stringstream saved;
  torch::save(first, saved);
  {
    torch::NoGradGuard no_grad;
    b.copy_(a);
  }
  Opt second({b}, options);
  torch::load(second, saved);
  a.mutable_grad() = ToTensor(kG2);
  b.mutable_grad() = ToTensor(kG2);
  first.step();
  second.step();
  EXPECT_TRUE(torch::equal(a, b)) << "a resumed optimizer must continue exactly";
}

TEST(LambTest, SavedStateResumesTheSameTrajectory) {
  ExpectSaveLoadResumesIdentically<Lamb>(LambOptions(0.01).weight_decay(0.01));
}

TEST(LarsTest, SavedStateResumesTheSameTrajectory) {
  ExpectSaveLoadResumesIdentically<Lars>(LarsOptions(0.1).weight_decay(1e-4));
}

TEST(RAdamTest, EightStepsFollowTheRAdamRuleThroughTheRectificationSwitch) {
  // With b2 = 0.9, rho_t passes 5 at step 6: the first steps take the momentum branch, the later
  // ones the rectified adaptive one.
  const double lr = 0.01, b1 = 0.8, b2 = 0.9, eps = 1e-8, wd = 0.001;
  torch::Tensor w = ToTensor(kW).requires_grad_(true);
  RAdam radam({w}, RAdamOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
  Vec ref = kW, m(4, 0), v(4, 0);
  const double rho_inf = 2 / (1 - b2) - 1;
  bool saw_momentum_branch = false, saw_rectified_branch = false;
  for (int t = 1; t <= 8; ++t) {
    const Vec& g0 = t % 2 ? kG1 : kG2;
    w.mutable_grad() = ToTensor(g0);
    radam.step();
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / (1 - std::pow(b2, t));
    for (int i = 0; i < 4; ++i) {
      const double g = static_cast<float>(g0[i]) + wd * ref[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      if (rho_t > 5) {
        const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                      ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        ref[i] -= lr * m_hat * rect * std::sqrt(1 - std::pow(b2, t)) / (std::sqrt(v[i]) + eps);
      } else {
        ref[i] -= lr * m_hat;
      }
    }
    (rho_t > 5 ? saw_rectified_branch : saw_momentum_branch) = true;
    ExpectNear(w, ref, 2e-6);
  }
  EXPECT_TRUE(saw_momentum_branch);
  EXPECT_TRUE(saw_rectified_branch);
}

TEST(RAdamTest, SavedStateResumesTheSameTrajectory) {
  ExpectSaveLoadResumesIdentically<RAdam>(RAdamOptions(0.01));
}

TEST(LinearWarmupTest, RisesLinearlyToSlotsTimesTheBaseRateThenHolds) {
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(123));
  LinearWarmup warmup(sgd, 0.1, /*slots=*/4, /*warmup_steps=*/3);
  auto lr = [&] { return sgd.param_groups()[0].options().get_lr(); };
  EXPECT_DOUBLE_EQ(lr(), 0.1);
  warmup.Step();
  EXPECT_DOUBLE_EQ(lr(), 0.2);
  warmup.Step();
  EXPECT_DOUBLE_EQ(lr(), 0.3);
  warmup.Step();
  EXPECT_DOUBLE_EQ(lr(), 0.4);
  warmup.Step();
  EXPECT_DOUBLE_EQ(lr(), 0.4);
}

// FusedSGD against torch::optim::SGD: same seeds, same gradients, several steps; the weights and
// momentum buffers must be bit-identical. Sizes cover the vector body and the scalar tail.
struct SgdCase {
  const char* name;
  torch::optim::SGDOptions options;
};

std::vector<SgdCase> SgdCases() {
  return {
      {"plain", torch::optim::SGDOptions(0.1)},
      {"momentum", torch::optim::SGDOptions(0.01).momentum(0.9)},
      {"nesterov+wd",
       torch::optim::SGDOptions(0.03).momentum(0.8).nesterov(true).weight_decay(1e-3)},
      {"dampening+wd",
       torch::optim::SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(0.01)},
  };
}

std::vector<torch::Tensor> RandomParams(torch::Dtype dtype = torch::kFloat32) {
  torch::manual_seed(7);
  return {torch::randn({1003}, dtype).requires_grad_(true),
          torch::randn({37, 5}, dtype).requires_grad_(true),
          torch::randn({3}, dtype).requires_grad_(true)};
}

std::vector<torch::Tensor> Clone(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

void SetGrads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(100 + step);
  for (auto& p : ps) p.mutable_grad() = torch::randn(p.sizes(), p.options().requires_grad(false));
}

// As zero_grad() leaves a gradient: zeros (LibTorch 1.x) or undefined (2.x's set_to_none).
bool GradIsZero(const torch::Tensor& p) {
  return !p.grad().defined() || p.grad().abs().max().item<double>() == 0.0;
}

void ExpectBitIdentical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i])) << what << ": parameter " << i << " max abs diff "
                                          << (a[i] - b[i]).abs().max().item<double>();
  }
}

TEST(FusedSgdTest, StepsAreBitIdenticalToLibTorchSgd) {
  for (const SgdCase& c : SgdCases()) {
    std::vector<torch::Tensor> a = RandomParams(), b = Clone(a), z = Clone(a);
    torch::optim::SGD reference(a, c.options);
    FusedSGD fused(b, c.options);
    FusedSGD fused_zeroing(z, c.options);
    for (int step = 0; step < 5; ++step) {
      SetGrads(a, step);
      SetGrads(b, step);
      SetGrads(z, step);
      reference.step();
      fused.step();
      fused_zeroing.StepAndZeroGrad();
      EXPECT_EQ(fused.last_path(), FusedSGD::Path::kFusedKernel) << c.name;
      for (auto& p : z) {
        EXPECT_EQ(p.grad().abs().max().item<float>(), 0.0f) << c.name << ": gradient not zeroed";
      }
      for (size_t i = 0; i < b.size(); ++i) {
        EXPECT_FALSE(torch::equal(b[i].grad(), torch::zeros_like(b[i])))
            << c.name << ": step() must leave the gradient alone";
      }
    }
    ExpectBitIdentical(a, b, std::string(c.name) + " step()");
    ExpectBitIdentical(a, z, std::string(c.name) + " StepAndZeroGrad()");
    EXPECT_FALSE(torch::equal(a[0], RandomParams()[0])) << c.name << ": nothing was updated";
  }
}

TEST(FusedSgdTest, CheckpointsMoveBetweenFusedAndLibTorchSgd) {
  const auto options = torch::optim::SGDOptions(0.02).momentum(0.9).weight_decay(1e-4);
  std::vector<torch::Tensor> a = RandomParams(), b = Clone(a);
  FusedSGD fused(a, options);
  for (int step = 0; step < 3; ++step) {
    SetGrads(a, step);
    fused.step();
  }
  std::stringstream saved;
  torch::save(fused, saved);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  }
  torch::optim::SGD reference(b, options);
  torch::load(reference, saved);
  for (int step = 3; step < 6; ++step) {
    SetGrads(a, step);
    SetGrads(b, step);
    fused.step();
    reference.step();
  }
  ExpectBitIdentical(a, b, "resumed in torch::optim::SGD");
}

// fp64 takes the multi-tensor path (at::_foreach_*), the one a GPU's parameters take: bit for
// bit LibTorch's SGD under every option, also when a parameter gets its first gradient (and so
// its momentum buffer) steps after the others.
TEST(FusedSgdTest, OtherDtypesTakeTheMultiTensorPathBitIdenticalToLibTorchSgd) {
  for (const SgdCase& c : SgdCases()) {
    std::vector<torch::Tensor> a = RandomParams(torch::kFloat64), b = Clone(a), z = Clone(a);
    torch::optim::SGD reference(a, c.options);
    FusedSGD fused(b, c.options), fused_zeroing(z, c.options);
    for (int step = 0; step < 4; ++step) {
      for (auto* ps : {&a, &b, &z}) {
        SetGrads(*ps, step);
        if (step < 2) (*ps)[1].mutable_grad() = torch::Tensor();  // no gradient yet
      }
      reference.step();
      fused.step();
      fused_zeroing.StepAndZeroGrad();
      EXPECT_EQ(fused.last_path(), FusedSGD::Path::kMultiTensor) << c.name;
      for (auto& p : z) EXPECT_TRUE(GradIsZero(p)) << c.name;
    }
    ExpectBitIdentical(a, b, std::string(c.name) + " fp64 step()");
    ExpectBitIdentical(a, z, std::string(c.name) + " fp64 StepAndZeroGrad()");
    EXPECT_FALSE(torch::equal(b[1], RandomParams(torch::kFloat64)[1])) << c.name;
  }
}

// On a GPU (the GPU build, on a machine with one; skipped elsewhere) every parameter takes the
// multi-tensor path: a few kernel launches per step instead of three or four per parameter.
// CUDA's foreach kernels may contract a + alpha * b into one fused multiply-add where the
// per-tensor kernels do not, so equality is to within fp32 rounding rather than bit for bit.
TEST(FusedSgdTest, OnAGpuTheMultiTensorPathMatchesLibTorchSgd) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to this LibTorch";
  for (const SgdCase& c : SgdCases()) {
    std::vector<torch::Tensor> a, b;
    for (const auto& p : RandomParams()) {
      a.push_back(p.detach().to(torch::kCUDA).requires_grad_(true));
      b.push_back(p.detach().to(torch::kCUDA).requires_grad_(true));
    }
    torch::optim::SGD reference(a, c.options);
    FusedSGD fused(b, c.options);
    for (int step = 0; step < 4; ++step) {
      SetGrads(a, step);
      SetGrads(b, step);
      reference.step();
      fused.StepAndZeroGrad();
      EXPECT_EQ(fused.last_path(), FusedSGD::Path::kMultiTensor) << c.name;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(torch::allclose(a[i], b[i], /*rtol=*/1e-5, /*atol=*/1e-6))
          << c.name << ": parameter " << i << " max abs diff "
          << (a[i] - b[i]).abs().max().item<double>();
    }
  }
}

TEST(FusedSgdTest, AGradientWithAGraphTakesLibTorchsPath) {
  std::vector<torch::Tensor> a = RandomParams();
  FusedSGD fused(a, torch::optim::SGDOptions(0.1).momentum(0.9));
  SetGrads(a, 0);
  fused.step();
  EXPECT_EQ(fused.last_path(), FusedSGD::Path::kFusedKernel);
  SetGrads(a, 1);
  a[2].mutable_grad() = a[2].grad().detach().requires_grad_(true);
  fused.step();
  EXPECT_EQ(fused.last_path(), FusedSGD::Path::kLibTorch);
}

TEST(FusedSgdTest, StepAndZeroGradWorksForAnyOptimizer) {
  std::vector<torch::Tensor> a = RandomParams();
  Lars lars(a, LarsOptions(0.1));
  SetGrads(a, 0);
  const torch::Tensor before = a[0].detach().clone();
  StepAndZeroGrad(lars);
  EXPECT_FALSE(torch::equal(before, a[0]));
  for (auto& p : a) EXPECT_TRUE(GradIsZero(p));
}

}  // namespace
}  // namespace cohort::runtime::optim
