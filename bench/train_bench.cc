// cohort-bench train: data-parallel training throughput on Fashion-MNIST (the same models,
// data order and optimizer as bench/train_vs_ddp.py builds for PyTorch DDP).
//
// Step s (counting warm-up steps from 0) trains on global batch indices
// (s*N*B + i) mod 60000 of a fixed permutation (seed 0); rank r takes [r*B, (r+1)*B).
// SGD, lr 0.01, momentum 0.9 (Cohort's FusedSGD unless --optimizer torch). With
// --aggregation-frequency K, K steps accumulate before one exchange and one optimizer step;
// every step still counts as B samples per rank.
// Rank 0 prints one JSON line with the throughput and a breakdown of rank 0's time.

#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/bench_commands.h"
#include "bench/models.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/fashion_mnist.h"
#include "cohort/optim/fused_sgd.h"
#include "cohort/status.h"
#include "runtime/gradient_reducer.h"
#include "runtime/process_setup.h"

namespace cohort::bench {
namespace {

struct Timings {
  double forward_ms = 0, backward_ms = 0, sync_ms = 0, optimizer_ms = 0;
};

double MsSince(absl::Time start) { return absl::ToDoubleMilliseconds(absl::Now() - start); }

absl::Status Train(const TrainOptions& o) {
  runtime::PrepareTrainingProcess();
  torch::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  COHORT_ASSIGN_OR_RETURN(comm::Transport transport, comm::ParseTransport(o.transport));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> comm,
                          comm::CreateCommunicatorFromEnv({.transport = transport}));
  const int rank = comm->rank(), ranks = comm->size();
  COHORT_ASSIGN_OR_RETURN(
      runtime::FashionMnist data,
      runtime::LoadFashionMnist(o.data_dir.empty() ? runtime::FashionMnistDir() : o.data_dir,
                                /*train=*/true));
  std::shared_ptr<BenchModel> model = MakeBenchModel(o.model);
  if (model == nullptr) return absl::InvalidArgumentError("--model: expected cnn or mlp");
  model->train();
  COHORT_RETURN_IF_ERROR(runtime::BroadcastModule(*model, *comm, 0));
  runtime::GradientReducerOptions reducer_options;
  reducer_options.fusion_threshold_mb = o.fusion_mb;
  reducer_options.aggregation_frequency = o.aggregation_frequency;
  reducer_options.compression = o.compression;
  reducer_options.auto_tune = o.auto_tune;
  reducer_options.overlap = o.overlap;
  COHORT_ASSIGN_OR_RETURN(auto reducer,
                          runtime::GradientReducer::Create(*model, comm.get(), reducer_options));
  const auto sgd_options = torch::optim::SGDOptions(o.lr).momentum(0.9);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (o.optimizer == "fused") {
    optimizer = std::make_unique<runtime::optim::FusedSGD>(model->parameters(), sgd_options);
  } else {
    optimizer = std::make_unique<torch::optim::SGD>(model->parameters(), sgd_options);
  }

  const int64_t n = data.images.size(0);
  torch::Tensor perm = torch::randperm(n, at::detail::createCPUGenerator(0),
                                       torch::TensorOptions().dtype(torch::kInt64));
  torch::Tensor within = torch::arange(o.per_slot_batch, torch::kInt64);
  Timings t;
  float last_loss = 0;
  auto step = [&](int64_t s) -> absl::Status {
    const int64_t base = (s * ranks * o.per_slot_batch + rank * o.per_slot_batch) % n;
    torch::Tensor idx = perm.index_select(0, (within + base).remainder(n));
    torch::Tensor x = data.images.index_select(0, idx);
    torch::Tensor y = data.labels.index_select(0, idx);
    absl::Time start = absl::Now();
    torch::Tensor loss = model->Loss(model->Forward(x), y);
    t.forward_ms += MsSince(start);
    start = absl::Now();
    loss.backward();
    t.backward_ms += MsSince(start);
    start = absl::Now();
    COHORT_ASSIGN_OR_RETURN(bool apply, reducer->Synchronize());
    t.sync_ms += MsSince(start);
    if (apply) {
      start = absl::Now();
      runtime::optim::StepAndZeroGrad(*optimizer);
      t.optimizer_ms += MsSince(start);
    }
    last_loss = loss.item<float>();
    return absl::OkStatus();
  };
  int64_t s = 0;
  for (; s < o.warmup; ++s) COHORT_RETURN_IF_ERROR(step(s));
  t = Timings{};
  COHORT_RETURN_IF_ERROR(comm->Barrier());
  const absl::Time start = absl::Now();
  for (; s < o.warmup + o.steps; ++s) COHORT_RETURN_IF_ERROR(step(s));
  COHORT_RETURN_IF_ERROR(comm->Barrier());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (rank == 0) {
    const double per = 1.0 / o.steps;
    std::printf(
        "{\"impl\":\"cohort\",\"model\":\"%s\",\"ranks\":%d,\"per_slot_batch\":%d,\"steps\":%d,"
        "\"warmup\":%d,\"aggregation_frequency\":%d,\"compression\":%s,\"transport\":\"%s\","
        "\"optimizer\":\"%s\",\"fusion_mb\":%g,\"buckets\":%zu,\"samples_per_s\":%.2f,"
        "\"step_ms\":%.3f,\"final_loss\":%.6f,\"forward_ms\":%.3f,\"backward_ms\":%.3f,\"sync_ms\":"
        "%.3f,"
        "\"optimizer_ms\":%.3f}\n",
        o.model.c_str(), ranks, o.per_slot_batch, o.steps, o.warmup, o.aggregation_frequency,
        o.compression ? "true" : "false", std::string(comm->transport()).c_str(),
        o.optimizer.c_str(), reducer->fusion_threshold_mb(), reducer->BucketNames().size(),
        static_cast<double>(ranks) * o.per_slot_batch * o.steps / seconds, seconds * 1000 / o.steps,
        last_loss, t.forward_ms * per, t.backward_ms * per, t.sync_ms * per, t.optimizer_ms * per);
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddTrainCommand(CLI::App& app, TrainOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Data-parallel training throughput on Fashion-MNIST. Rank 0 prints one JSON line: "
      "samples_per_s over all ranks, step_ms, final_loss, and rank 0's mean time per step in "
      "forward, backward, gradient synchronization and the optimizer.");
  cmd->add_option("--model", options.model, "cnn (1.2 M parameters) or mlp (20 M)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cnn", "mlp"}));
  cmd->add_option("--per-slot-batch", options.per_slot_batch, "Samples per rank per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--steps", options.steps, "Timed steps")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--warmup", options.warmup, "Untimed steps first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--aggregation-frequency", options.aggregation_frequency,
                  "Local passes per gradient exchange (optimizations.aggregation_frequency)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_flag("--compression", options.compression, "fp16 gradients on the wire");
  cmd->add_option("--fusion-mb", options.fusion_mb, "Fusion bucket size limit in MB")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_flag("!--no-overlap", options.overlap,
                "Reduce all buckets after the backward pass instead of during it");
  cmd->add_flag("--auto-tune", options.auto_tune, "Try fusion sizes during the first steps");
  cmd->add_option("--transport", options.transport, "Communicator transport")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "shm", "gloo", "hierarchical"}));
  cmd->add_option("--threads", options.threads, "Compute threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--lr", options.lr, "SGD learning rate (momentum 0.9)")->capture_default_str();
  cmd->add_option("--optimizer", options.optimizer,
                  "SGD implementation: fused (Cohort's one-pass FusedSGD, gradients zeroed in the "
                  "same pass) or torch (torch::optim::SGD, then zero_grad, as the DDP peer)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fused", "torch"}));
  cmd->add_option("--data-dir", options.data_dir,
                  "Fashion-MNIST directory (default: $COHORT_DATA_DIR or "
                  "/usr/share/datasets/fashion-mnist)");
  return cmd;
}

int RunTrainCommand(const TrainOptions& options) {
  absl::Status status = Train(options);
  if (!status.ok()) {
    std::fprintf(stderr, "cohort-bench train: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::bench
