// A worker for the data-parallel correctness tests (data_parallel_test.cc): trains a small
// convolution + linear model on Fashion-MNIST's test split with GradientReducer and writes its
// final weights to <out>.rank<R>.bin (raw fp32, parameters in module order).
//
// Step s, micro-step m (of --aggregation K), rank r trains on images
// [(s*K + m)*G + r*b, ... + b) with G = --global-batch and b = G / ranks, so a run with N ranks
// and K micro-steps sees exactly the samples a 1-rank run with G*K per step sees.
//
// With --device cuda the model, its batches, the gradient buckets and the weights' broadcast are
// on the GPU (the local rank's, or the only one visible) and go through the NCCL communicator;
// metrics through the host one.
//
// Exit codes: 0 done, 2 usage, 3 a collective failed (prints FAILED-AS-EXPECTED at <time>),
// 4 --device cuda without the GPUs it needs (prints NO-GPU and why).

#include <signal.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/comm/topology.h"
#include "cohort/fashion_mnist.h"
#include "cohort/status.h"
#include "comm/rendezvous.h"
#include "runtime/gradient_reducer.h"
#include "runtime/metrics.h"

namespace {

using cohort::runtime::GradientReducer;
using cohort::runtime::GradientReducerOptions;

struct Net : torch::nn::Module {
  explicit Net(bool with_unused) {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 5).stride(2)));
    fc1 = register_module("fc1", torch::nn::Linear(4 * 12 * 12, 32));
    fc2 = register_module("fc2", torch::nn::Linear(32, 10));
    if (with_unused) unused = register_module("unused", torch::nn::Linear(10, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::relu(conv->forward(x)).flatten(1);
    return fc2->forward(torch::relu(fc1->forward(h)));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, unused{nullptr};
};

struct Flags {
  int global_batch = 16;
  double lr = 0.01;  // SGD with momentum 0.9, as cohort-bench train
  int steps = 20;
  int aggregation = 1;
  bool compression = false;
  double fusion_mb = 64;
  double first_bucket_mb = 1;
  bool auto_tune = false;
  std::vector<double> candidates_mb;
  bool unused_layer = false;
  bool error_on_unused = false;
  int die_rank = -1;
  int die_step = -1;
  std::string transport = "auto";
  std::string device = "cpu";  // or cuda
  int min_gpus = 1;            // with --device cuda: exit 4 when fewer are visible
  std::string out;
};

constexpr int kNoGpuExit = 4;

// The worker's communicators: the host one, and for a GPU model the device one (NCCL) over the
// same rendezvous, which carries the weights and gradients.
struct Comms {
  std::unique_ptr<cohort::comm::Communicator> host, device;
  cohort::comm::Communicator& weights() { return device ? *device : *host; }
};

absl::StatusOr<Comms> Connect(const Flags& f, const cohort::comm::Topology& topology) {
  COHORT_ASSIGN_OR_RETURN(cohort::comm::Transport transport,
                          cohort::comm::ParseTransport(f.transport));
  COHORT_ASSIGN_OR_RETURN(auto rendezvous, cohort::comm::Rendezvous::Join(topology));
  Comms comms;
  COHORT_ASSIGN_OR_RETURN(comms.host,
                          cohort::comm::CreateCommunicator(rendezvous, {.transport = transport}));
  if (f.device == "cuda") {
    COHORT_ASSIGN_OR_RETURN(comms.device,
                            cohort::comm::CreateDeviceCommunicator(rendezvous, "device"));
  }
  return comms;
}

// cuda:0 when one GPU is visible, else the local rank's; exits kNoGpuExit without enough GPUs.
torch::Device ChooseDevice(const Flags& f, int local_rank) {
  if (f.device != "cuda") return torch::kCPU;
  const int64_t gpus = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  if (gpus < f.min_gpus) {
    std::printf("NO-GPU: needs %d GPU(s), this LibTorch sees %lld\n", f.min_gpus,
                static_cast<long long>(gpus));
    std::fflush(stdout);
    std::_Exit(kNoGpuExit);
  }
  return torch::Device(torch::kCUDA, gpus == 1 ? 0 : local_rank);
}

double Now() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

absl::Status Run(const Flags& f) {
  torch::set_num_threads(1);
  torch::manual_seed(7);
  COHORT_ASSIGN_OR_RETURN(cohort::comm::Topology topology, cohort::comm::TopologyFromEnv());
  const torch::Device device = ChooseDevice(f, topology.local_rank);
  COHORT_ASSIGN_OR_RETURN(Comms comms, Connect(f, topology));
  cohort::comm::Communicator* comm = comms.host.get();
  const int rank = comm->rank(), ranks = comm->size();
  if (f.global_batch % ranks != 0) return absl::InvalidArgumentError("global batch % ranks != 0");
  const int b = f.global_batch / ranks;
  COHORT_ASSIGN_OR_RETURN(auto data, cohort::runtime::LoadFashionMnist(
                                         cohort::runtime::FashionMnistDir(), /*train=*/false));
  auto net = std::make_shared<Net>(f.unused_layer);
  net->to(device);
  COHORT_RETURN_IF_ERROR(cohort::runtime::BroadcastModule(*net, comms.weights(), 0));
  GradientReducerOptions options;
  options.aggregation_frequency = f.aggregation;
  options.compression = f.compression;
  options.fusion_threshold_mb = f.fusion_mb;
  options.first_bucket_mb = f.first_bucket_mb;
  options.auto_tune = f.auto_tune;
  if (!f.candidates_mb.empty()) options.auto_tune_candidates_mb = f.candidates_mb;
  options.error_on_unused_parameters = f.error_on_unused;
  COHORT_ASSIGN_OR_RETURN(auto reducer, GradientReducer::Create(*net, &comms.weights(), options));
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(f.lr).momentum(0.9));
  const int64_t n = data.images.size(0);
  for (int s = 0; s < f.steps; ++s) {
    for (int m = 0; m < f.aggregation; ++m) {
      const int64_t offset = (static_cast<int64_t>(s) * f.aggregation + m) * f.global_batch +
                             static_cast<int64_t>(rank) * b;
      torch::Tensor idx = torch::arange(offset, offset + b, torch::kInt64).remainder(n);
      torch::Tensor loss =
          torch::cross_entropy_loss(net->forward(data.images.index_select(0, idx).to(device)),
                                    data.labels.index_select(0, idx).to(device));
      if (rank == f.die_rank && s == f.die_step) {
        std::printf("VICTIM dying at %.3f\n", Now());
        std::fflush(stdout);
        ::kill(::getpid(), SIGKILL);
      }
      loss.backward();
      absl::StatusOr<bool> step = reducer->Synchronize();
      if (!step.ok()) {
        std::printf("FAILED-AS-EXPECTED at %.3f: %s\n", Now(), step.status().ToString().c_str());
        std::fflush(stdout);
        std::_Exit(3);
      }
      if (*step != (m == f.aggregation - 1)) {
        return absl::InternalError("Synchronize stepped at the wrong micro-step");
      }
      if (*step) {
        sgd.step();
        sgd.zero_grad();
      }
    }
  }
  std::printf("BUCKETS %zu\n", reducer->BucketNames().size());
  std::fflush(stdout);
  std::ofstream out(f.out + ".rank" + std::to_string(rank) + ".bin", std::ios::binary);
  for (const torch::Tensor& p : net->parameters()) {
    torch::Tensor c = p.detach().to(torch::kCPU).contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
  }
  if (!out) return absl::DataLossError("writing " + f.out);
  // Metric reduction: rank r reports loss r + 1 with weight r + 1.
  const std::map<std::string, double> metrics = {{"loss", rank + 1.0}};
  COHORT_ASSIGN_OR_RETURN(auto mean, cohort::runtime::AverageMetrics(*comm, metrics));
  COHORT_ASSIGN_OR_RETURN(auto weighted,
                          cohort::runtime::WeightedAverageMetrics(*comm, metrics, rank + 1.0));
  std::printf("METRICS mean %.6f weighted %.6f\n", mean["loss"], weighted["loss"]);
  std::printf("DONE rank %d buckets %zu fusion %g MB\n", rank, reducer->BucketNames().size(),
              reducer->fusion_threshold_mb());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (flag == "--global-batch") f.global_batch = std::stoi(value());
    else if (flag == "--lr") f.lr = std::stod(value());
    else if (flag == "--steps") f.steps = std::stoi(value());
    else if (flag == "--aggregation") f.aggregation = std::stoi(value());
    else if (flag == "--compression") f.compression = true;
    else if (flag == "--fusion-mb") f.fusion_mb = std::stod(value());
    else if (flag == "--first-bucket-mb") f.first_bucket_mb = std::stod(value());
    else if (flag == "--auto-tune") f.auto_tune = true;
    else if (flag == "--candidates-mb") {
      for (absl::string_view c : absl::StrSplit(value(), ',')) {
        double mb = 0;
        if (absl::SimpleAtod(c, &mb)) f.candidates_mb.push_back(mb);
      }
    } else if (flag == "--unused-layer") f.unused_layer = true;
    else if (flag == "--error-on-unused") f.error_on_unused = true;
    else if (flag == "--die-rank") f.die_rank = std::stoi(value());
    else if (flag == "--die-step") f.die_step = std::stoi(value());
    else if (flag == "--transport") f.transport = value();
    else if (flag == "--device")
      f.device = value();
    else if (flag == "--min-gpus")
      f.min_gpus = std::stoi(value());
    else if (flag == "--out") f.out = value();
    else {
      std::fprintf(stderr, "train_worker: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  absl::Status status = Run(f);
  if (!status.ok()) {
    std::fprintf(stderr, "train_worker: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
