// cohort-bench train: data-parallel training throughput on Fashion-MNIST (the same models,
// data order and optimizer as bench/train_vs_ddp.py builds for PyTorch DDP), or on synthetic
// images for the larger resnet18 (bench/models.h), on the CPU or (one rank) a GPU.
//
// Step s (counting warm-up steps from 0) trains on global batch indices
// (s*N*B + i) mod 60000 of a fixed permutation (seed 0); rank r takes [r*B, (r+1)*B).
// SGD, lr 0.01, momentum 0.9 (Cohort's FusedSGD unless --optimizer torch). With
// --aggregation-frequency K, K steps accumulate before one exchange and one optimizer step;
// every step still counts as B samples per rank.
// Rank 0 prints one JSON line with the throughput and a breakdown of rank 0's time.

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_commands.h"
#include "bench/models.h"
#include "bench/op_trace.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/fashion_mnist.h"
#include "cohort/optim/fused_sgd.h"
#include "cohort/status.h"
#include "comm/rendezvous.h"
#include "nlohmann/json.hpp"
#include "runtime/device_wait.h"
#include "runtime/gradient_reducer.h"
#include "runtime/process_setup.h"
#include "runtime/step_profiler.h"
#include "wire/step_profile.h"
#include "wire/trace_events.h"

namespace cohort::bench {
namespace {

struct Timings {
  double forward_ms = 0, backward_ms = 0, sync_ms = 0, optimizer_ms = 0;
};


// Rank 0's profiled steps summarized: per step, the buckets' communication time and how much
// of it fell inside the backward pass (the overlap the reducer exists for).
struct OverlapSummary {
  int steps = 0;
  double backward_ms = 0, communication_ms = 0, overlapped_ms = 0, gradient_wait_ms = 0;
};

OverlapSummary Summarize(const std::vector<wire::StepProfileRecord>& records) {
  OverlapSummary sum;
  for (const wire::StepProfileRecord& r : records) {
    if (r.rank != 0) continue;
    int64_t b0 = 0, b1 = 0;
    for (const wire::PhaseSpan& p : r.phases) {
      if (p.name == "backward") b0 = p.start_us, b1 = p.start_us + p.duration_us;
      if (p.name == "gradient_wait") sum.gradient_wait_ms += p.duration_us / 1e3;
    }
    sum.backward_ms += (b1 - b0) / 1e3;
    for (const wire::BucketSpan& b : r.buckets) {
      sum.communication_ms += b.duration_us / 1e3;
      const int64_t inside = std::min(b1, b.start_us + b.duration_us) - std::max(b0, b.start_us);
      sum.overlapped_ms += std::max<int64_t>(0, inside) / 1e3;
    }
    ++sum.steps;
  }
  return sum;
}

// Every rank's profile file gathered on rank 0, which writes DIR/trace.json and returns the
// records; other ranks return none.
absl::StatusOr<std::vector<wire::StepProfileRecord>> GatherProfiles(
    comm::Communicator& comm, const runtime::StepProfiler& profiler, const std::string& dir) {
  std::ifstream in(profiler.path());
  std::stringstream text;
  text << in.rdbuf();
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> files, comm.Gather(text.str(), 0));
  std::vector<wire::StepProfileRecord> records;
  for (size_t rank = 0; rank < files.size(); ++rank) {
    int line_number = 0;
    for (absl::string_view line : absl::StrSplit(files[rank], '\n', absl::SkipEmpty())) {
      const std::string context = absl::StrFormat("rank %d's profile line %d", rank, ++line_number);
      const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      COHORT_ASSIGN_OR_RETURN(wire::StepProfileRecord r,
                              wire::ParseStepProfileRecord(json, context));
      records.push_back(std::move(r));
    }
  }
  if (comm.rank() != 0) return records;
  const std::string trace = (std::filesystem::path(dir) / "trace.json").string();
  std::ofstream out(trace);
  out << wire::TraceEvents(/*trial_id=*/0, records, /*truncated=*/false).dump() << '\n';
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", trace));
  return records;
}

struct Result {
  int ranks = 0;
  double seconds = 0;
  double fusion_mb = 0;
  size_t buckets = 0;
  float last_loss = 0;
  int64_t parameters = 0;  // the model's
  std::string device;
  Timings timings;  // sums over the timed steps
  std::string transport;
};

// The GPU libraries this process has loaded (from /proc/self/maps): two sides that load
// different cuDNN or cuBLAS builds choose different kernels, which is worth seeing in a
// side-by-side. An empty list on the CPU.
std::set<std::string> LoadedGpuLibraries() {
  std::set<std::string> found;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    for (const char* stem : {"libcudnn", "libcublas", "libcudart", "libnccl", "libtorch_cuda"}) {
      if (path.find(stem) != std::string::npos) found.insert(path);
    }
  }
  return found;
}

void PrintResult(const TrainOptions& o, const Result& r, const OverlapSummary* overlap) {
  const double per = 1.0 / o.steps;
  std::string profile;
  if (r.device.rfind("cuda", 0) == 0) {
    absl::StrAppend(&profile, ",\"gpu_libraries\":", nlohmann::json(LoadedGpuLibraries()).dump());
  }
  if (overlap != nullptr && overlap->steps > 0) {
    const double n = overlap->steps;
    absl::StrAppendFormat(
        &profile,
        ",\"profiled_steps\":%d,\"profiled_backward_ms\":%.3f,\"bucket_comm_ms\":%.3f,"
        "\"bucket_comm_in_backward_ms\":%.3f,\"overlap_fraction\":%.3f,"
        "\"profiled_gradient_wait_ms\":%.3f",
        overlap->steps, overlap->backward_ms / n, overlap->communication_ms / n,
        overlap->overlapped_ms / n,
        overlap->communication_ms > 0 ? overlap->overlapped_ms / overlap->communication_ms : 0,
        overlap->gradient_wait_ms / n);
  }
  std::printf(
      "{\"impl\":\"cohort\",\"model\":\"%s\",\"ranks\":%d,\"per_slot_batch\":%d,\"steps\":%d,"
      "\"warmup\":%d,\"aggregation_frequency\":%d,\"compression\":%s,\"auto_tune\":%s,"
      "\"overlap\":%s,\"transport\":\"%s\",\"optimizer\":\"%s\",\"fusion_mb\":%g,"
      "\"buckets\":%zu,\"samples_per_s\":%.2f,\"step_ms\":%.3f,\"final_loss\":%.6f,"
      "\"forward_ms\":%.3f,\"backward_ms\":%.3f,\"sync_ms\":%.3f,\"optimizer_ms\":%.3f,"
      "\"parameters\":%lld,\"device\":\"%s\"%s}\n",
      o.model.c_str(), r.ranks, o.per_slot_batch, o.steps, o.warmup, o.aggregation_frequency,
      o.compression ? "true" : "false", o.auto_tune ? "true" : "false",
      o.overlap ? "true" : "false", r.transport.c_str(), o.optimizer.c_str(), r.fusion_mb,
      r.buckets, static_cast<double>(r.ranks) * o.per_slot_batch * o.steps / r.seconds,
      r.seconds * 1000 / o.steps, r.last_loss, r.timings.forward_ms * per,
      r.timings.backward_ms * per, r.timings.sync_ms * per, r.timings.optimizer_ms * per,
      static_cast<long long>(r.parameters), r.device.c_str(), profile.c_str());
  std::fflush(stdout);
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> MakeOptimizer(const TrainOptions& o,
                                                                       BenchModel& model) {
  const auto sgd_options = torch::optim::SGDOptions(o.lr).momentum(0.9);
  if (o.optimizer == "fused") {
    return std::make_unique<runtime::optim::FusedSGD>(model.parameters(), sgd_options);
  }
  return std::make_unique<torch::optim::SGD>(model.parameters(), sgd_options);
}

// One rank's training run: what it trains with, one step, and the timed and profiled loops.
class Trainer {
 public:
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainOptions& o) {
    runtime::PrepareTrainingProcess();
    torch::set_num_threads(o.threads);
    torch::manual_seed(o.seed);
    auto t = std::unique_ptr<Trainer>(new Trainer(o));
    COHORT_ASSIGN_OR_RETURN(comm::Transport transport, comm::ParseTransport(o.transport));
    COHORT_ASSIGN_OR_RETURN(comm::Topology topology, comm::TopologyFromEnv());
    COHORT_ASSIGN_OR_RETURN(std::shared_ptr<comm::Rendezvous> rendezvous,
                            comm::Rendezvous::Join(topology));
    COHORT_ASSIGN_OR_RETURN(t->comm_,
                            comm::CreateCommunicator(rendezvous, {.transport = transport}));
    t->model_ = MakeBenchModel(o.model);
    if (t->model_ == nullptr) {
      return absl::InvalidArgumentError("--model: expected cnn, mlp or resnet18");
    }
    COHORT_ASSIGN_OR_RETURN(t->device_, ParseDevice(o.device));
    t->model_->to(t->device_);
    t->model_->train();
    if (t->model_->SampleShape() == kFashionMnistSampleShape) {
      COHORT_RETURN_IF_ERROR(t->LoadData());
    } else {
      t->MakeSyntheticBatch();
    }
    runtime::GradientReducerOptions reducer;
    reducer.fusion_threshold_mb = o.fusion_mb;
    reducer.aggregation_frequency = o.aggregation_frequency;
    reducer.compression = o.compression;
    reducer.auto_tune = o.auto_tune;
    reducer.overlap = o.overlap;
    // Weights and gradients on GPUs that move between ranks go through NCCL; the host
    // communicator keeps the barriers and the result.
    comm::Communicator* weights = t->comm_.get();
    if (t->device_.is_cuda() &&
        runtime::GradientReducer::MovesGradients(t->comm_->size(), reducer)) {
      COHORT_ASSIGN_OR_RETURN(t->device_comm_,
                              comm::CreateDeviceCommunicator(rendezvous, "bench-device"));
      weights = t->device_comm_.get();
    }
    COHORT_RETURN_IF_ERROR(runtime::BroadcastModule(*t->model_, *weights, 0));
    COHORT_ASSIGN_OR_RETURN(t->reducer_,
                            runtime::GradientReducer::Create(*t->model_, weights, reducer));
    COHORT_ASSIGN_OR_RETURN(t->optimizer_, MakeOptimizer(o, *t->model_));
    t->StartProfiler();
    return t;
  }

  // Warm-up, the timed steps, then (with --profile-dir, --op-trace) the profiled ones; rank 0
  // prints.
  absl::Status Run() {
    int64_t s = 0;
    for (; s < o_.warmup; ++s) COHORT_RETURN_IF_ERROR(Step(s));
    result_.timings = Timings{};
    // The warm-up's queued GPU work is done before the clock starts (as train_vs_torch.py's
    // PyTorch side does): else the timed steps pay for up to the launch queue's worth of it.
    COHORT_RETURN_IF_ERROR(runtime::WaitForDevice(device_, comm_->topology().collective_timeout,
                                                  "the warm-up steps' kernels"));
    COHORT_RETURN_IF_ERROR(comm_->Barrier());
    const absl::Time start = absl::Now();
    for (; s < timed_end(); ++s) COHORT_RETURN_IF_ERROR(Step(s));
    result_.last_loss = last_loss_.item<float>();  // waits for a GPU's queued work
    COHORT_RETURN_IF_ERROR(comm_->Barrier());
    result_.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    result_.ranks = comm_->size();
    result_.transport = std::string(comm_->transport());
    result_.fusion_mb = reducer_->fusion_threshold_mb();
    result_.buckets = reducer_->BucketNames().size();
    result_.device = device_.str();
    for (const torch::Tensor& p : model_->parameters()) result_.parameters += p.numel();
    std::optional<OverlapSummary> overlap;
    if (!o_.profile_dir.empty()) {
      const Timings timed = result_.timings;
      for (; s < timed_end() + o_.profile_steps; ++s) COHORT_RETURN_IF_ERROR(Step(s));
      result_.timings = timed;
      COHORT_ASSIGN_OR_RETURN(std::vector<wire::StepProfileRecord> records,
                              GatherProfiles(*comm_, *profiler_, o_.profile_dir));
      overlap = Summarize(records);
    }
    if (!o_.op_trace.empty()) COHORT_RETURN_IF_ERROR(TraceOps(s));
    if (comm_->rank() == 0) PrintResult(o_, result_, overlap ? &*overlap : nullptr);
    return absl::OkStatus();
  }

  // --op-trace: profile_steps steps from `s` under LibTorch's profiler on rank 0 (the others
  // train alongside, unprofiled); the device's work is done before the profiler stops.
  absl::Status TraceOps(int64_t s) {
    const Timings timed = result_.timings;
    std::unique_ptr<OpTrace> trace;
    if (comm_->rank() == 0) {
      COHORT_ASSIGN_OR_RETURN(trace, OpTrace::Start(device_.is_cuda()));
    }
    for (const int64_t end = s + o_.profile_steps; s < end; ++s) {
      COHORT_RETURN_IF_ERROR(Step(s));
    }
    result_.timings = timed;
    if (trace == nullptr) return absl::OkStatus();
    COHORT_RETURN_IF_ERROR(runtime::WaitForDevice(device_, comm_->topology().collective_timeout,
                                                  "the traced steps' kernels"));
    return trace->StopAndSave(o_.op_trace);
  }

 private:
  explicit Trainer(const TrainOptions& o) : o_(o) {}
  int64_t timed_end() const { return o_.warmup + o_.steps; }

  static absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
    try {
      torch::Device device(name);
      if (device.is_cuda() && !torch::cuda::is_available()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "--device ", name, ": this LibTorch sees no CUDA device (a CPU-only build, or no "
            "GPU here); build against a CUDA LibTorch (README, \"GPUs\") or use --device cpu"));
      }
      return device;
    } catch (const c10::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--device ", name, ": expected cpu, cuda or cuda:N (", e.what_without_backtrace(), ")"));
    }
  }

  // Fashion-MNIST's training set and the data order over it.
  absl::Status LoadData() {
    COHORT_ASSIGN_OR_RETURN(
        data_, runtime::LoadFashionMnist(
                   o_.data_dir.empty() ? runtime::FashionMnistDir() : o_.data_dir, /*train=*/true));
    perm_ = torch::randperm(data_.images.size(0), at::detail::createCPUGenerator(0),
                            torch::TensorOptions().dtype(torch::kInt64));
    return absl::OkStatus();
  }

  // Models not of Fashion-MNIST's shape train on one fixed batch of random images and labels
  // (seeded by rank), made once on the device: the step measures the model, not a data loader.
  void MakeSyntheticBatch() {
    const std::vector<int64_t> shape = model_->SampleShape();
    std::vector<int64_t> batch = {o_.per_slot_batch};
    batch.insert(batch.end(), shape.begin(), shape.end());
    auto generator = at::detail::createCPUGenerator(1000 + comm_->rank());
    synthetic_images_ = torch::randn(batch, generator).to(device_);
    synthetic_labels_ =
        torch::randint(model_->Classes(), {o_.per_slot_batch}, generator, torch::kInt64)
            .to(device_);
  }

  // The profiled steps follow the timed ones, so profiling never changes the throughput.
  void StartProfiler() {
    profiler_ = std::make_unique<runtime::StepProfiler>(
        runtime::StepProfilerOptions{.enabled = !o_.profile_dir.empty(),
                                     .begin_on_batch = timed_end() + 1,
                                     .end_after_batch = timed_end() + o_.profile_steps,
                                     .rank = comm_->rank(),
                                     .run_dir = o_.profile_dir});
    if (o_.profile_dir.empty()) return;
    std::error_code ignored;  // absent is fine; the profiler appends, so an old run's lines go
    std::filesystem::remove(profiler_->path(), ignored);
  }

  // Ends phase `name` begun at `start`: adds it to `total_ms` and to the profile.
  absl::Time Phase(const char* name, absl::Time start, double& total_ms) {
    const absl::Time end = absl::Now();
    total_ms += absl::ToDoubleMilliseconds(end - start);
    profiler_->Phase(name, start, end);
    return end;
  }

  // Step s trains on global batch indices (s*N*B + i) mod n of the fixed permutation; rank r
  // takes [r*B, (r+1)*B).
  absl::Status Step(int64_t s) {
    torch::Tensor x = synthetic_images_, y = synthetic_labels_;
    if (!x.defined()) {
      const int64_t n = data_.images.size(0), b = o_.per_slot_batch;
      const int64_t base = (s * comm_->size() * b + comm_->rank() * b) % n;
      torch::Tensor idx = perm_.index_select(0, (within_ + base).remainder(n));
      x = data_.images.index_select(0, idx).to(device_);
      y = data_.labels.index_select(0, idx).to(device_);
    }
    Timings& t = result_.timings;
    const absl::Time step_start = absl::Now();
    profiler_->Begin(s, step_start);
    reducer_->set_record_bucket_timings(profiler_->active());
    torch::Tensor loss = model_->Loss(model_->Forward(x), y);
    absl::Time start = Phase("forward", step_start, t.forward_ms);
    loss.backward();
    start = Phase("backward", start, t.backward_ms);
    COHORT_ASSIGN_OR_RETURN(bool apply, reducer_->Synchronize());
    start = Phase("gradient_wait", start, t.sync_ms);
    if (apply) {
      runtime::optim::StepAndZeroGrad(*optimizer_);
      Phase("optimizer_step", start, t.optimizer_ms);
    }
    last_loss_ = loss.detach();  // read once at the end: no device sync per step
    if (profiler_->active()) {
      profiler_->Phase("step", step_start, absl::Now());
      profiler_->Buckets(reducer_->TakeBucketTimings());
      profiler_->End();
    }
    return absl::OkStatus();
  }

  const TrainOptions& o_;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<comm::Communicator> device_comm_;  // NCCL, for a GPU model over several ranks
  runtime::FashionMnist data_;
  std::shared_ptr<BenchModel> model_;
  std::unique_ptr<runtime::GradientReducer> reducer_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<runtime::StepProfiler> profiler_;
  torch::Device device_{torch::kCPU};
  torch::Tensor synthetic_images_, synthetic_labels_;  // resnet18's fixed batch, on device_
  torch::Tensor last_loss_;
  torch::Tensor perm_;  // the data order: a fixed permutation (seed 0) of the training set
  torch::Tensor within_ = torch::arange(o_.per_slot_batch, torch::kInt64);
  Result result_;
};

absl::Status Train(const TrainOptions& o) {
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(o));
  return trainer->Run();
}

}  // namespace

CLI::App* AddTrainCommand(CLI::App& app, TrainOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Data-parallel training throughput on Fashion-MNIST. Rank 0 prints one JSON line: "
      "samples_per_s over all ranks, step_ms, final_loss, and rank 0's mean time per step in "
      "forward, backward, gradient synchronization and the optimizer.");
  cmd->add_option("--model", options.model,
                  "cnn (1.2 M parameters) or mlp (20 M) on Fashion-MNIST, or resnet18 (11.7 M) on "
                  "synthetic 224x224 images")
      ->capture_default_str()
      ->check(CLI::IsMember({"cnn", "mlp", "resnet18"}));
  cmd->add_option("--device", options.device,
                  "cpu, or cuda / cuda:N with a CUDA build of LibTorch and Cohort "
                  "(-DCOHORT_CUDA=ON; several ranks reduce gradients with NCCL, one GPU each)")
      ->capture_default_str();
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
  cmd->add_option("--profile-dir", options.profile_dir,
                  "Profile --profile-steps more steps after the timed ones: every rank's phases "
                  "and gradient buckets; rank 0 writes DIR/trace.json (open in ui.perfetto.dev) "
                  "and adds the buckets' overlap with the backward pass to its line");
  cmd->add_option("--op-trace", options.op_trace,
                  "After the timed (and --profile-dir) steps, --profile-steps more under "
                  "LibTorch's profiler: rank 0 writes every operator and, on a GPU, every kernel "
                  "to this Chrome trace, as torch.profiler does (bench/compare_traces.py compares "
                  "two)");
  cmd->add_option("--profile-steps", options.profile_steps,
                  "Steps profiled with --profile-dir, and again with --op-trace")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
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
