#include "runtime/gradient_reducer.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "comm/half_allreduce.h"
#include "comm/vector_kernels.h"
#include "common/logging.h"
#include "runtime/bucket_layout.h"
#include "runtime/comm_worker.h"
#include "runtime/fusion_autotuner.h"

namespace cohort::runtime {
namespace {

constexpr double kMiB = 1 << 20;

// The parameter's element type on the wire; InvalidArgument unless it is dense, fp32 or fp64,
// and where `comm` reads it (host memory, or the GPU for a device communicator).
absl::StatusOr<comm::DataType> CommType(const std::string& name, const torch::Tensor& t,
                                        const comm::Communicator& comm) {
  if (t.is_sparse()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", name, "' is sparse: data parallelism supports dense parameters"));
  }
  if (t.device().is_cpu() == comm.device_buffers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter '", name, "' is on ", t.device().str(), " but the communicator (",
        comm.transport(), ") reduces ", comm.device_buffers() ? "GPU" : "host", " memory",
        comm.device_buffers()
            ? ": move the model to its GPU (cuda:0) before creating the reducer"
            : ": a model on a GPU needs the device communicator (NCCL, a -DCOHORT_CUDA=ON build: "
              "core::DistributedContext::DeviceCommunicator)"));
  }
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return comm::DataType::kFloat32;
    case torch::kFloat64:
      return comm::DataType::kFloat64;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", name, "' has dtype ", std::string(c10::toString(t.scalar_type())),
          ": data parallelism supports fp32 and fp64 parameters"));
  }
}

// "name[2,3]:Float;..." for every tensor: equal on every rank iff the architectures match.
std::string Describe(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  std::string out;
  for (const auto& [name, t] : tensors) {
    absl::StrAppend(&out, name, "[", absl::StrJoin(t.sizes(), ","),
                    "]:", std::string(c10::toString(t.scalar_type())), ";");
  }
  return out;
}

// Fails unless every rank passes the same `description`; the error names the first rank whose
// model differs and the first tensor that differs.
absl::Status CheckSameOnAllRanks(comm::Communicator& comm, const std::string& description,
                                 absl::string_view what) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.Allgather(description));
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    size_t at = 0;
    while (at < all[r].size() && at < all[0].size() && all[r][at] == all[0][at]) ++at;
    size_t start = all[0].rfind(';', at == 0 ? 0 : at - 1);
    start = start == std::string::npos ? 0 : start + 1;
    auto entry = [&](const std::string& s) {
      size_t end = s.find(';', start);
      return start >= s.size() ? std::string("(nothing)") : s.substr(start, end - start);
    };
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": rank ", r, "'s model differs from rank 0's: rank 0 has ", entry(all[0]), ", rank ",
        r, " has ", entry(all[r]), " (every rank must build the same model)"));
  }
  return absl::OkStatus();
}

// Broadcasts `bytes` of host memory from `root`: in place where `comm` reads host memory, else
// (a device communicator, whose Broadcast takes GPU memory only) through Allgather, which every
// transport stages through host memory. For the reducer's small control messages.
absl::Status BroadcastHostBytes(comm::Communicator& comm, void* data, size_t bytes, int root) {
  if (!comm.device_buffers()) return comm.Broadcast(data, bytes, root);
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> all,
                          comm.Allgather(absl::string_view(static_cast<char*>(data), bytes)));
  if (static_cast<size_t>(root) >= all.size() || all[root].size() != bytes) {
    return absl::InternalError(absl::StrCat(
        "rank ", root, " sent ", root < static_cast<int>(all.size()) ? all[root].size() : 0,
        " bytes where ", bytes, " were expected"));
  }
  std::memcpy(data, all[root].data(), bytes);
  return absl::OkStatus();
}

// LibTorch's messages carry a C++ backtrace after the first line.
std::string FirstLine(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

void Scale(void* data, size_t count, comm::DataType dtype, double scale) {
  if (scale == 1.0) return;
  if (dtype == comm::DataType::kFloat32) {
    comm::Scale(static_cast<float*>(data), count, static_cast<float>(scale));
  } else {
    comm::Scale(static_cast<double*>(data), count, scale);
  }
}

}  // namespace

class GradientReducer::Impl {
 public:
  struct Param {
    std::string name;
    torch::Tensor tensor;
    comm::DataType dtype;
    std::shared_ptr<torch::autograd::Node> accumulator;
    uintptr_t hook_key = 0;
    int bucket = -1;
    torch::Tensor view;  // aliases the parameter's slice of its bucket, shaped like the parameter
    bool ready = false;  // its gradient arrived in this cycle's last pass
  };
  struct Bucket {
    std::vector<int> params;
    comm::DataType dtype;
    torch::Tensor flat;
    std::vector<uint16_t> wire;  // fp16 copy when compressing (host memory)
    torch::Tensor device_wire;   // fp16 copy when compressing on the GPU
    int pending = 0;             // gradients not yet ready in this cycle
  };

  Impl(comm::Communicator* comm, GradientReducerOptions options)
      : comm_(comm), options_(std::move(options)), worker_("gradient reducer") {
    if (options_.auto_tune && !options_.auto_tune_candidates_mb.empty()) {
      tuner_ = std::make_unique<FusionAutotuner>(
          FusionAutotuner::Options{.candidates_mb = options_.auto_tune_candidates_mb,
                                   .also_without_overlap = options_.auto_tune_overlap});
    }
    overlap_ = options_.overlap;
    const int k = std::max(1, options_.aggregation_frequency);
    aggregation_scale_ = options_.average_aggregated_gradients ? 1.0 / k : 1.0;
  }

  ~Impl() {
    // Waits (bounded) for allreduces still in flight before the buckets they write are freed;
    // a failure there was already returned by the step that started them, and a destructor
    // has no one left to tell.
    worker_.Drain(options_.timeout, "gradient allreduces").IgnoreError();
    for (Param& p : params_) {
      if (p.accumulator) p.accumulator->del_post_hook(p.hook_key);
    }
  }

  absl::Status Init(torch::nn::Module& module) {
    if (options_.aggregation_frequency < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("aggregation_frequency must be >= 1, got ", options_.aggregation_frequency));
    }
    if (options_.fusion_threshold_mb < 0 || options_.first_bucket_mb < 0) {
      return absl::InvalidArgumentError("fusion thresholds must be >= 0 MB");
    }
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      if (item.value().requires_grad()) named.emplace_back(item.key(), item.value());
    }
    COHORT_RETURN_IF_ERROR(
        CheckSameOnAllRanks(*comm_, Describe(named), "creating the gradient reducer"));
    // One rank, one backward pass per step: nothing to do (see the header).
    passthrough_ = !GradientReducer::MovesGradients(comm_->size(), options_);
    if (passthrough_) {
      threshold_mb_ = options_.fusion_threshold_mb;
      return absl::OkStatus();
    }
    for (auto& [name, tensor] : named) {
      Param p;
      p.name = name;
      p.tensor = tensor;
      COHORT_ASSIGN_OR_RETURN(p.dtype, CommType(name, tensor, *comm_));
      params_.push_back(std::move(p));
    }
    for (int i = 0; i < static_cast<int>(params_.size()); ++i) {
      Param& p = params_[i];
      p.accumulator = torch::autograd::impl::grad_accumulator(p.tensor);
      p.hook_key =
          p.accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [this, i](const torch::autograd::variable_list& outputs,
                        const torch::autograd::variable_list&) {
                try {
                  OnGradientReady(i);
                } catch (const std::exception& e) {
                  if (hook_error_.ok()) {
                    hook_error_ = absl::InternalError(
                        absl::StrCat("rank ", comm_->rank(), ": gradient hook of parameter '",
                                     params_[i].name, "': ", FirstLine(e.what())));
                  }
                }
                return outputs;
              }));
    }
    std::vector<int> reverse(params_.size());
    for (size_t i = 0; i < reverse.size(); ++i)
      reverse[i] = static_cast<int>(reverse.size() - 1 - i);
    Rebuild(reverse, options_.fusion_threshold_mb);
    record_order_ = options_.rebuild_from_ready_order;
    if (record_order_) order_.clear();  // filled with the ready order during the first step
    last_step_end_ = absl::Now();
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Synchronize() {
    if (passthrough_) {
      ++steps_;
      return true;
    }
    if (!error_.ok()) return error_;
    if (!hook_error_.ok()) return Fail(hook_error_);
    const int k = options_.aggregation_frequency;
    if (micro_step_ + 1 < k) {
      ++micro_step_;
      return false;
    }
    std::vector<std::string> unused;
    for (size_t b = next_submit_; b < buckets_.size(); ++b) {
      for (int i : buckets_[b].params) {
        Param& p = params_[i];
        if (p.ready) continue;
        unused.push_back(p.name);
        p.view.zero_();
        p.tensor.mutable_grad() = p.view;
      }
      buckets_[b].pending = 0;
    }
    if (!unused.empty() && options_.error_on_unused_parameters) {
      return Fail(absl::FailedPreconditionError(absl::StrCat(
          "rank ", comm_->rank(), ": ", unused.size(),
          " parameter(s) received no gradient in step ", steps_ + 1, ": ",
          absl::StrJoin(unused.begin(), unused.begin() + std::min<size_t>(5, unused.size()), ", "),
          unused.size() > 5 ? ", ..." : "",
          " (make every parameter take part in the loss, or allow unused parameters)")));
    }
    SubmitReadyBuckets();
    absl::Status drained = worker_.Drain(options_.timeout, "gradient allreduces");
    if (!drained.ok()) return Fail(drained);

    micro_step_ = 0;
    next_submit_ = 0;
    for (Param& p : params_) p.ready = false;
    for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
    ++steps_;
    const absl::Time now = absl::Now();
    const absl::Duration step_time = now - last_step_end_;
    last_step_end_ = now;

    if (record_order_) {
      record_order_ = false;
      absl::Status s = AdoptReadyOrderOfRank0(unused);
      if (!s.ok()) return Fail(s);
      Rebuild(order_, CurrentThresholdMb());
      if (tuner_ != nullptr) overlap_ = tuner_->current_overlap();
    } else if (tuner_ != nullptr && tuner_->tuning() && steps_ > 1 && tuner_->Record(step_time)) {
      if (!tuner_->tuning()) {
        int32_t choice = tuner_->best_index();
        absl::Status s = BroadcastHostBytes(*comm_, &choice, sizeof(choice), 0);
        if (!s.ok()) return Fail(Annotate(s, "broadcasting the fusion autotuner's choice"));
        tuner_->SetChoice(choice);
        if (comm_->rank() == 0) {
          COHORT_LOG(INFO) << "auto_tune_tensor_fusion: " << tuner_->Summary()
                           << " (median step time per threshold; rank 0 decides)";
        }
      }
      Rebuild(order_, tuner_->current_mb());
      overlap_ = tuner_->current_overlap();
    }
    return true;
  }

  std::vector<std::vector<std::string>> BucketNames() const {
    std::vector<std::vector<std::string>> names;
    for (const Bucket& b : buckets_) {
      names.emplace_back();
      for (int i : b.params) names.back().push_back(params_[i].name);
    }
    return names;
  }
  double threshold_mb() const { return threshold_mb_; }
  int rank() const { return comm_->rank(); }
  int64_t steps() const { return steps_; }
  // The training thread sets the flag while no bucket is in flight; the worker's queue lock
  // orders it before the jobs submitted next, and Drain orders the timings before the take.
  void set_record_timings(bool on) { record_timings_ = on; }
  std::vector<BucketTiming> TakeTimings() { return std::exchange(timings_, {}); }

 private:
  double CurrentThresholdMb() const {
    return tuner_ != nullptr ? tuner_->current_mb() : options_.fusion_threshold_mb;
  }

  absl::Status Fail(absl::Status status) {
    // Quiesces the communication thread before the reducer reports `status`, the first error;
    // a later one from the drain would only repeat or follow from it.
    worker_.Drain(options_.timeout, "gradient allreduces").IgnoreError();
    error_ = std::move(status);
    return error_;
  }

  // Runs on the thread running backward, once per parameter per pass.
  void OnGradientReady(int i) {
    if (micro_step_ + 1 < options_.aggregation_frequency) return;  // accumulating locally
    Param& p = params_[i];
    Bucket& bucket = buckets_[p.bucket];
    if (p.ready) {
      if (bucket.pending == 0 && hook_error_.ok()) {
        hook_error_ = absl::FailedPreconditionError(absl::StrCat(
            "rank ", comm_->rank(), ": parameter '", p.name,
            "' received a second gradient after its bucket was sent; run one backward pass per "
            "Synchronize()"));
      }
      return;
    }
    p.ready = true;
    if (record_order_) order_.push_back(i);
    AdoptGradient(p);
    if (--bucket.pending == 0 && overlap_) SubmitReadyBuckets();
  }

  // Makes the parameter's .grad its bucket view, copying a gradient autograd put elsewhere
  // (the first pass after a .grad was set to None, or a user-assigned gradient).
  static void AdoptGradient(Param& p) {
    torch::Tensor& grad = p.tensor.mutable_grad();
    if (grad.defined() && grad.data_ptr() == p.view.data_ptr()) return;
    if (grad.defined()) {
      p.view.copy_(grad);
    } else {
      p.view.zero_();
    }
    grad = p.view;
  }

  // Sends buckets whose gradients are all ready, strictly in bucket order.
  void SubmitReadyBuckets() {
    while (next_submit_ < buckets_.size() && buckets_[next_submit_].pending == 0) {
      const int b = static_cast<int>(next_submit_++);
      worker_.Submit([this, b] { return ReduceBucket(b); });
    }
  }

  // Runs on the communication thread: the allreduce, timed while profiling.
  absl::Status ReduceBucket(int b) {
    if (!record_timings_) return AllreduceBucket(b);
    const absl::Time start = absl::Now();
    absl::Status status = AllreduceBucket(b);
    const Bucket& bucket = buckets_[b];
    const size_t element = options_.compression && bucket.dtype == comm::DataType::kFloat32
                               ? sizeof(uint16_t)
                               : comm::DataTypeSize(bucket.dtype);
    timings_.push_back(
        {b, static_cast<int64_t>(bucket.flat.numel() * element), start, absl::Now()});
    return status;
  }

  absl::Status AllreduceBucket(int b) {
    Bucket& bucket = buckets_[b];
    const size_t n = static_cast<size_t>(bucket.flat.numel());
    void* data = bucket.flat.data_ptr();  // host memory, or the GPU's for AllreduceOnDevice
    absl::Status status;
    if (comm_->device_buffers()) {
      status = AllreduceOnDevice(bucket, data, n);
    } else if (options_.compression && bucket.dtype == comm::DataType::kFloat32) {
      status = comm::AllreduceAsHalf(*comm_, static_cast<float*>(data), n,
                                     static_cast<float>(aggregation_scale_ / comm_->size()),
                                     &bucket.wire);
    } else {
      // kAverage divides by N inside the transport, while the reduced piece is still in
      // cache (the shared-memory path); only the aggregation factor needs a pass of its own.
      status = comm_->Allreduce(data, n, bucket.dtype, comm::ReduceOp::kAverage);
      if (status.ok()) Scale(data, n, bucket.dtype, aggregation_scale_);
    }
    if (status.ok()) return status;
    return Annotate(
        status,
        absl::StrFormat(
            "rank %d: allreduce of gradient bucket %d of %d (%d parameters from '%s', %.2f MB%s)",
            comm_->rank(), b, buckets_.size(), bucket.params.size(),
            params_[bucket.params.front()].name,
            static_cast<double>(n * comm::DataTypeSize(bucket.dtype)) / kMiB,
            options_.compression ? ", fp16 on the wire" : ""));
  }

  // A bucket in GPU memory, on the communication thread. LibTorch's kernels issued here (the
  // fp16 conversions, the aggregation scale) go to the device's default stream, where the
  // backward pass's kernels run: the communicator's collective waits for them there
  // (FollowComputeStream, inside Allreduce) and returns once the reduction is done, so what is
  // issued after it, and the optimizer step after Synchronize, sees reduced gradients.
  absl::Status AllreduceOnDevice(Bucket& bucket, void* data, size_t n) {
    try {
      torch::NoGradGuard no_grad;
      absl::Status status;
      if (bucket.device_wire.defined()) {
        bucket.device_wire.copy_(bucket.flat);
        status = comm_->Allreduce(bucket.device_wire.data_ptr(), n, comm::DataType::kFloat16,
                                  comm::ReduceOp::kAverage);
        if (status.ok()) bucket.flat.copy_(bucket.device_wire);
      } else {
        status = comm_->Allreduce(data, n, bucket.dtype, comm::ReduceOp::kAverage);
      }
      if (status.ok() && aggregation_scale_ != 1.0) bucket.flat.mul_(aggregation_scale_);
      return status;
    } catch (const std::exception& e) {  // LibTorch throws c10::Error
      return absl::InternalError(FirstLine(e.what()));
    }
  }

  // Completes this rank's observed order with the parameters that got no gradient, then
  // replaces it with rank 0's so every rank builds the same layout.
  absl::Status AdoptReadyOrderOfRank0(const std::vector<std::string>& unused) {
    std::vector<bool> seen(params_.size(), false);
    for (int i : order_) seen[i] = true;
    for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) {
      if (!seen[i]) order_.push_back(i);
    }
    std::vector<int32_t> wire(order_.begin(), order_.end());
    COHORT_RETURN_IF_ERROR(
        Annotate(BroadcastHostBytes(*comm_, wire.data(), wire.size() * sizeof(int32_t), 0),
                 "broadcasting rank 0's gradient ready order"));
    order_.assign(wire.begin(), wire.end());
    return absl::OkStatus();
  }

  // New buckets for `order` and `threshold_mb`; every .grad moves into its new bucket view
  // with its current value.
  void Rebuild(const std::vector<int>& order, double threshold_mb) {
    order_ = order;
    threshold_mb_ = threshold_mb;
    std::vector<size_t> bytes;
    std::vector<int> keys;
    for (const Param& p : params_) {
      bytes.push_back(static_cast<size_t>(p.tensor.numel()) * comm::DataTypeSize(p.dtype));
      keys.push_back(static_cast<int>(p.dtype));
    }
    const size_t limit = static_cast<size_t>(threshold_mb * kMiB);
    const size_t first = std::min(limit, static_cast<size_t>(options_.first_bucket_mb * kMiB));
    std::vector<std::vector<int>> layout = AssignBuckets(bytes, keys, order, first, limit);
    std::vector<Bucket> buckets(layout.size());
    torch::NoGradGuard no_grad;
    for (size_t b = 0; b < layout.size(); ++b) {
      Bucket& bucket = buckets[b];
      bucket.params = std::move(layout[b]);
      bucket.dtype = params_[bucket.params.front()].dtype;
      int64_t total = 0;
      for (int i : bucket.params) total += params_[i].tensor.numel();
      bucket.flat = torch::empty(
          {total}, params_[bucket.params.front()].tensor.options().requires_grad(false));
      if (comm_->device_buffers() && options_.compression &&
          bucket.dtype == comm::DataType::kFloat32) {
        bucket.device_wire = torch::empty({total}, bucket.flat.options().dtype(torch::kHalf));
      }
      bucket.pending = static_cast<int>(bucket.params.size());
      int64_t offset = 0;
      for (int i : bucket.params) {
        Param& p = params_[i];
        p.bucket = static_cast<int>(b);
        // Not an autograd view (optimizers call detach_() on gradients, which views refuse):
        // a plain tensor over the bucket's storage.
        p.view = torch::empty({0}, bucket.flat.options());
        p.view.set_(bucket.flat.storage(), offset, p.tensor.sizes());
        offset += p.tensor.numel();
        AdoptGradient(p);
      }
    }
    buckets_ = std::move(buckets);
  }

  comm::Communicator* comm_;
  GradientReducerOptions options_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  std::vector<int> order_;  // current layout's order; during the first step, the observed one
  double threshold_mb_ = 0;
  bool overlap_ = true;           // options_.overlap, or the autotuner's current candidate
  double aggregation_scale_ = 1;  // 1/k with average_aggregated_gradients, else 1
  size_t next_submit_ = 0;
  int micro_step_ = 0;
  int64_t steps_ = 0;
  bool passthrough_ = false;  // one rank, aggregation 1: no buckets, no hooks
  bool record_order_ = false;
  absl::Time last_step_end_;
  bool record_timings_ = false;
  std::vector<BucketTiming> timings_;  // appended by the communication thread
  std::unique_ptr<FusionAutotuner> tuner_;
  absl::Status hook_error_;
  absl::Status error_;
  CommWorker worker_;  // last: its thread stops before the buckets it reads are destroyed
};

GradientReducer::GradientReducer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GradientReducer::~GradientReducer() = default;

absl::StatusOr<std::unique_ptr<GradientReducer>> GradientReducer::Create(
    torch::nn::Module& module, comm::Communicator* comm, GradientReducerOptions options) {
  auto impl = std::make_unique<Impl>(comm, std::move(options));
  try {
    COHORT_RETURN_IF_ERROR(impl->Init(module));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(
        "rank ", comm->rank(), ": creating the gradient reducer: ", FirstLine(e.what())));
  }
  return std::unique_ptr<GradientReducer>(new GradientReducer(std::move(impl)));
}

absl::StatusOr<bool> GradientReducer::Synchronize() {
  try {
    return impl_->Synchronize();
  } catch (const std::exception& e) {  // LibTorch throws c10::Error
    return absl::InternalError(
        absl::StrCat("rank ", impl_->rank(), ": synchronizing gradients: ", FirstLine(e.what())));
  }
}
bool GradientReducer::MovesGradients(int ranks, const GradientReducerOptions& options) {
  return ranks > 1 || options.aggregation_frequency > 1 || options.error_on_unused_parameters;
}

std::vector<std::vector<std::string>> GradientReducer::BucketNames() const {
  return impl_->BucketNames();
}
double GradientReducer::fusion_threshold_mb() const { return impl_->threshold_mb(); }
int64_t GradientReducer::steps() const { return impl_->steps(); }
void GradientReducer::set_record_bucket_timings(bool on) { impl_->set_record_timings(on); }
std::vector<BucketTiming> GradientReducer::TakeBucketTimings() { return impl_->TakeTimings(); }

namespace {

absl::Status BroadcastModuleOrThrow(torch::nn::Module& module, comm::Communicator& comm, int root) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : module.named_parameters(true))
    named.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(true)) named.emplace_back(item.key(), item.value());
  COHORT_RETURN_IF_ERROR(CheckSameOnAllRanks(comm, Describe(named), "broadcasting the model"));
  if (comm.size() == 1) return absl::OkStatus();
  torch::NoGradGuard no_grad;
  // One flat buffer per dtype, in module order.
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& [name, t] : named) by_dtype[t.scalar_type()].push_back(t);
  for (auto& [dtype, tensors] : by_dtype) {
    std::vector<torch::Tensor> flat_parts;
    for (const torch::Tensor& t : tensors) flat_parts.push_back(t.reshape({-1}));
    torch::Tensor flat = torch::cat(flat_parts).contiguous();
    COHORT_RETURN_IF_ERROR(
        Annotate(comm.Broadcast(flat.data_ptr(), flat.numel() * flat.element_size(), root),
                 absl::StrCat("rank ", comm.rank(), ": broadcasting the model's ",
                              std::string(c10::toString(dtype)),
                              " parameters and buffers from rank ", root)));
    if (comm.rank() == root) continue;
    int64_t offset = 0;
    for (torch::Tensor& t : tensors) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BroadcastModule(torch::nn::Module& module, comm::Communicator& comm, int root) {
  try {
    return BroadcastModuleOrThrow(module, comm, root);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("rank ", comm.rank(), ": broadcasting the model: ", FirstLine(e.what())));
  }
}

}  // namespace cohort::runtime
