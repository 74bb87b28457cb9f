#include "comm/nccl_communicator.h"

#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "comm/internal/failure_causes.h"
#include "common/logging.h"

namespace cohort::comm {
namespace {

// Polling: the first polls spin (a small allreduce takes tens of microseconds), then the sleep
// between polls doubles up to kMaxPollSleep, which bounds what a long wait costs in latency.
constexpr int kSpinPolls = 200;
constexpr absl::Duration kFirstPollSleep = absl::Microseconds(20);
constexpr absl::Duration kMaxPollSleep = absl::Milliseconds(1);
// Finalizing a healthy communicator at destruction waits at most this long, then aborts it.
constexpr absl::Duration kFinalizeWait = absl::Seconds(10);

// Store keys under the group's prefix.
constexpr char kIdKey[] = "nccl/id";
constexpr char kJoinedKey[] = "nccl/joined/";  // + rank: set before NCCL's set-up

ncclDataType_t ToNccl(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

absl::Status CudaStatus(absl::string_view call, cudaError_t error) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(call, " failed: ", cudaGetErrorName(error), " (",
                                             cudaGetErrorString(error), ")"));
}

// NCCL's result as a Status: a peer's or the system's failure is Unavailable, our misuse
// Internal. `comm` (may be null) adds NCCL's last message.
absl::Status NcclStatus(absl::string_view call, ncclResult_t result, ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  const char* last = ncclGetLastError(comm);
  const std::string detail =
      last != nullptr && *last != '\0' ? absl::StrCat(" (", last, ")") : std::string();
  std::string message = absl::StrCat(call, " failed: ", ncclGetErrorString(result), detail);
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) {
    return absl::InternalError(message);
  }
  return absl::UnavailableError(message);
}

// The sleep before each poll: none at first, then growing (see kSpinPolls).
class Backoff {
 public:
  void Wait() {
    if (++polls_ <= kSpinPolls) {
      std::this_thread::yield();
      return;
    }
    absl::SleepFor(sleep_);
    sleep_ = std::min(sleep_ * 2, kMaxPollSleep);
  }

 private:
  int polls_ = 0;
  absl::Duration sleep_ = kFirstPollSleep;
};

// The result of one poll: nullopt while the work is still running.
using Probe = std::optional<absl::Status>;

}  // namespace

class NcclCommunicator::Impl {
 public:
  Impl(Group group, const Options& options)
      : group_(std::move(group)),
        options_(options),
        store_(group_.store()),
        causes_(group_, "nccl") {}

  ~Impl() {
    if (comm_ != nullptr) {
      if (error_.ok() && cudaSetDevice(options_.device) == cudaSuccess &&
          cudaStreamQuery(stream_) == cudaSuccess) {
        Finalize();
      } else {
        ncclCommAbort(comm_);
      }
    }
    if (compute_done_ != nullptr) cudaEventDestroy(compute_done_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (staging_ != nullptr) cudaFree(staging_);
  }

  int rank() const { return group_.rank; }
  int size() const { return group_.size; }
  int device() const { return options_.device; }
  cudaStream_t stream() const { return stream_; }
  cudaEvent_t compute_done() const { return compute_done_; }

  absl::Status Init() {
    COHORT_RETURN_IF_ERROR(SelectDevice());
    COHORT_RETURN_IF_ERROR(
        Where("set-up", CudaStatus("cudaStreamCreateWithFlags",
                                   cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking))));
    COHORT_RETURN_IF_ERROR(Where(
        "set-up", CudaStatus("cudaEventCreateWithFlags",
                             cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming))));
    COHORT_RETURN_IF_ERROR(
        Where("set-up", CudaStatus("cudaMalloc (scratch)", cudaMalloc(&scratch_, ScratchBytes()))));
    UseNetworkInterface();
    ncclUniqueId id;
    COHORT_RETURN_IF_ERROR(ExchangeId(&id));
    COHORT_RETURN_IF_ERROR(store_->Set(absl::StrCat(kJoinedKey, rank()), ""));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // set-up returns at once; AwaitSetUp polls it against the deadline
    ncclResult_t started = ncclCommInitRankConfig(&comm_, size(), id, rank(), &config);
    if (started != ncclSuccess && started != ncclInProgress) {
      comm_ = nullptr;
      return Where("set-up", NcclStatus("ncclCommInitRankConfig", started, nullptr));
    }
    return AwaitSetUp();
  }

  // OK when collective `op` may start (and the device is set on this thread); otherwise the
  // error that broke the communicator, or the rendezvous failure notice, which then breaks it.
  absl::Status Check(absl::string_view op) {
    if (!error_.ok()) return error_;
    absl::Status notice = group_.rendezvous->failure();
    if (!notice.ok())
      return Fail(absl::UnavailableError(absl::StrCat(Name(op), ": ", notice.message())));
    return Where(op, CudaStatus("cudaSetDevice", cudaSetDevice(options_.device)));
  }

  // InvalidArgument unless `data` is device (or managed) memory of this communicator's device.
  absl::Status CheckDeviceBuffer(absl::string_view op, const void* data) const {
    if (data == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(Name(op), ": data is null"));
    }
    cudaPointerAttributes attributes;
    if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it
      return absl::InvalidArgumentError(absl::StrCat(Name(op), ": data is not CUDA memory"));
    }
    if (attributes.type == cudaMemoryTypeManaged) return absl::OkStatus();
    if (attributes.type != cudaMemoryTypeDevice) {
      return absl::InvalidArgumentError(absl::StrCat(
          Name(op), ": data is host memory; the nccl transport takes device buffers (device ",
          options_.device, ")"));
    }
    if (attributes.device != options_.device) {
      return absl::InvalidArgumentError(absl::StrCat(Name(op), ": data is on device ",
                                                     attributes.device, ", this rank uses device ",
                                                     options_.device));
    }
    return absl::OkStatus();
  }

  // Enqueues one NCCL call (`call` returns its ncclResult_t). In nonblocking mode NCCL may
  // still be enqueuing when the call returns (ncclInProgress): wait for that too.
  template <typename Call>
  absl::Status Enqueue(absl::string_view op, Call&& call) {
    ++op_number_;
    ncclResult_t result = call();
    if (result == ncclSuccess) return absl::OkStatus();
    if (result != ncclInProgress) return Fail(Where(op, NcclStatus("enqueue", result, comm_)));
    return Poll(op, "enqueuing", options_.timeout, [&]() -> Probe {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclInProgress) return std::nullopt;
      return NcclStatus("enqueue", state, comm_);
    });
  }

  // Waits for everything on the stream, at most the collective timeout.
  absl::Status AwaitStream(absl::string_view op) {
    return Poll(op, "completion", options_.timeout, [&]() -> Probe {
      cudaError_t query = cudaStreamQuery(stream_);
      if (query == cudaSuccess) return absl::OkStatus();
      if (query != cudaErrorNotReady) return CudaStatus("cudaStreamQuery", query);
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) return NcclStatus("NCCL", state, comm_);
      return std::nullopt;
    });
  }

  // The host's part of a staged collective: `bytes` at `host` to the stream-ordered device
  // memory at `device` (or back), on the stream.
  absl::Status CopyAsync(absl::string_view op, void* to, const void* from, size_t bytes,
                         cudaMemcpyKind kind) {
    if (bytes == 0) return absl::OkStatus();
    return Fail(
        Where(op, CudaStatus("cudaMemcpyAsync", cudaMemcpyAsync(to, from, bytes, kind, stream_))));
  }

  // A device buffer of at least `bytes` for staged collectives (kept and grown).
  absl::StatusOr<char*> Staging(absl::string_view op, size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_ != nullptr) cudaFree(staging_);
      staging_ = nullptr;
      staging_bytes_ = 0;
      COHORT_RETURN_IF_ERROR(
          Fail(Where(op, CudaStatus("cudaMalloc (staging)", cudaMalloc(&staging_, bytes)))));
      staging_bytes_ = bytes;
    }
    return static_cast<char*>(staging_);
  }

  // Device scratch: size() int64 slots (lengths for Allgather; slot 0 also Barrier's int32).
  char* scratch() const { return static_cast<char*>(scratch_); }
  ncclComm_t comm() const { return comm_; }

  // Breaks the communicator with `status` (OK passes through): aborts NCCL, tells the peers.
  absl::Status Fail(absl::Status status) {
    if (status.ok() || !error_.ok()) return error_.ok() ? status : error_;
    error_ = status;
    causes_.Publish(status);
    if (comm_ != nullptr) {
      ncclResult_t aborted = ncclCommAbort(comm_);
      if (aborted != ncclSuccess) {
        COHORT_LOG(WARNING) << Name("abort") << ": ncclCommAbort: " << ncclGetErrorString(aborted);
      }
      comm_ = nullptr;
    }
    return error_;
  }

  std::string Name(absl::string_view op) const {
    return absl::StrCat(group_.Name(rank()), ": nccl ", op);
  }

 private:
  size_t ScratchBytes() const { return std::max<size_t>(8, 8 * static_cast<size_t>(size())); }

  absl::Status Where(absl::string_view op, const absl::Status& status) const {
    if (status.ok()) return status;
    return absl::Status(status.code(), absl::StrCat(Name(op), ": ", status.message()));
  }

  absl::Status SelectDevice() {
    int count = 0;
    COHORT_RETURN_IF_ERROR(
        Where("set-up", CudaStatus("cudaGetDeviceCount", cudaGetDeviceCount(&count))));
    if (options_.device < 0 || options_.device >= count) {
      return absl::InvalidArgumentError(absl::StrCat(
          Name("set-up"), ": CUDA device ", options_.device, " does not exist: ", count,
          " visible (CUDA_VISIBLE_DEVICES=",
          std::getenv("CUDA_VISIBLE_DEVICES") != nullptr ? std::getenv("CUDA_VISIBLE_DEVICES")
                                                         : "unset",
          ")"));
    }
    return Where("set-up", CudaStatus("cudaSetDevice", cudaSetDevice(options_.device)));
  }

  void UseNetworkInterface() const {
    const std::string& interface = group_.rendezvous->topology().network_interface;
    if (!interface.empty()) ::setenv("NCCL_SOCKET_IFNAME", interface.c_str(), /*overwrite=*/0);
  }

  // Rank 0 creates the id (NCCL's bootstrap address) and publishes it; the others read it.
  absl::Status ExchangeId(ncclUniqueId* id) {
    const absl::Duration wait = options_.init_timeout;
    if (rank() == 0) {
      COHORT_RETURN_IF_ERROR(
          Where("set-up", NcclStatus("ncclGetUniqueId", ncclGetUniqueId(id), nullptr)));
      return store_->Set(kIdKey, absl::string_view(id->internal, sizeof(id->internal)));
    }
    absl::StatusOr<std::string> value = store_->Get(kIdKey, wait);
    if (!value.ok()) {
      return Annotate(value.status(), absl::StrCat(Name("set-up"), ": waiting for rank 0's id"));
    }
    if (value->size() != sizeof(id->internal)) {
      return absl::InternalError(absl::StrCat(Name("set-up"), ": rank 0's id has ", value->size(),
                                              " bytes, expected ", sizeof(id->internal)));
    }
    std::memcpy(id->internal, value->data(), value->size());
    return absl::OkStatus();
  }

  absl::Status AwaitSetUp() {
    absl::Status status = Poll("set-up", "set-up", options_.init_timeout, [&]() -> Probe {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclInProgress) return std::nullopt;
      return NcclStatus("ncclCommInitRankConfig", state, comm_);
    });
    if (absl::IsDeadlineExceeded(status)) {
      status = absl::DeadlineExceededError(absl::StrCat(status.message(), NotJoined()));
    }
    return status;
  }

  // "; ranks 2, 3 never started it" for the ranks whose join key is missing.
  std::string NotJoined() {
    std::vector<std::string> missing;
    for (int r = 0; r < size(); ++r) {
      if (!store_->Get(absl::StrCat(kJoinedKey, r), absl::Milliseconds(1)).ok()) {
        missing.push_back(group_.Name(r));
      }
    }
    if (missing.empty()) return "; every rank started it (network trouble between them?)";
    return absl::StrCat("; ", absl::StrJoin(missing, ", "), " never started it");
  }

  // Polls `probe` until it has a result, the deadline passes or a peer failure is known. A
  // failure breaks the communicator (Fail).
  template <typename ProbeFn>
  absl::Status Poll(absl::string_view op, absl::string_view stage, absl::Duration timeout,
                    ProbeFn&& probe) {
    const absl::Time deadline = absl::Now() + timeout;
    Backoff backoff;
    while (true) {
      Probe result = probe();
      if (result.has_value()) {
        if (result->ok()) return absl::OkStatus();
        return Fail(Explain(op, *result));
      }
      absl::Status notice = group_.rendezvous->failure();
      if (!notice.ok()) {
        return Fail(absl::UnavailableError(absl::StrCat(Name(op), ": ", notice.message())));
      }
      if (absl::Now() >= deadline) {
        return Fail(absl::DeadlineExceededError(
            absl::StrCat(Name(op), " (collective #", op_number_, ") timed out after ",
                         absl::FormatDuration(timeout), " waiting for its ", stage,
                         causes_.MissingMembers(op_number_))));
      }
      backoff.Wait();
    }
  }

  // NCCL's own error, with the cause a peer left (the rank that failed first says why).
  absl::Status Explain(absl::string_view op, const absl::Status& error) {
    absl::Status cause = causes_.Await();
    if (!cause.ok()) {
      return absl::Status(cause.code(), absl::StrCat(Name(op), " abandoned because ",
                                                     cause.message(), " [", error.message(), "]"));
    }
    return Where(op, error);
  }

  void Finalize() {
    ncclResult_t result = ncclCommFinalize(comm_);
    const absl::Time deadline = absl::Now() + kFinalizeWait;
    while (result == ncclInProgress && absl::Now() < deadline) {
      absl::SleepFor(kMaxPollSleep);
      ncclCommGetAsyncError(comm_, &result);
    }
    if (result == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }

  Group group_;
  Options options_;
  std::shared_ptr<Store> store_;
  internal::FailureCauses causes_;  // why a collective failed, told between the members
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;  // FollowComputeStream's mark on the default stream
  void* scratch_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  int64_t op_number_ = 0;
  absl::Status error_;
};

absl::StatusOr<int> NcclCommunicator::DefaultDevice(const Topology& topology) {
  int count = 0;
  COHORT_RETURN_IF_ERROR(CudaStatus("cudaGetDeviceCount", cudaGetDeviceCount(&count)));
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (count == 1) return 0;
  if (topology.local_rank < count) return topology.local_rank;
  return absl::FailedPreconditionError(absl::StrCat(
      "rank ", topology.rank, " is local rank ", topology.local_rank, " of ", topology.local_size,
      " on this machine, but ", count,
      " CUDA devices are visible (CUDA_VISIBLE_DEVICES=", visible != nullptr ? visible : "unset",
      "): the nccl transport needs a GPU per worker "
      "(cohort-launch --gpus gives each worker its own)"));
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Group group,
                                                                           const Options& options) {
  if (group.size < 1 || group.rank < 0 || group.rank >= group.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl group '", group.prefix, "': rank ", group.rank, " of ", group.size));
  }
  Topology topology = group.rendezvous->topology();
  auto impl = std::make_unique<Impl>(std::move(group), options);
  COHORT_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(topology), std::move(impl)));
}

NcclCommunicator::NcclCommunicator(Topology topology, std::unique_ptr<Impl> impl)
    : Communicator(std::move(topology)), impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() = default;

cudaStream_t NcclCommunicator::stream() const { return impl_->stream(); }
int NcclCommunicator::device() const { return impl_->device(); }

absl::Status NcclCommunicator::AllreduceAsync(void* data, size_t count, DataType dtype,
                                              ReduceOp op) {
  COHORT_RETURN_IF_ERROR(impl_->Check("allreduce"));
  if (count == 0) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(impl_->CheckDeviceBuffer("allreduce", data));
  const ncclRedOp_t nccl_op = op == ReduceOp::kSum ? ncclSum : ncclAvg;  // ints: toward zero
  return impl_->Enqueue("allreduce", [&] {
    return ncclAllReduce(data, data, count, ToNccl(dtype), nccl_op, impl_->comm(), impl_->stream());
  });
}

absl::Status NcclCommunicator::Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) {
  COHORT_RETURN_IF_ERROR(FollowComputeStream());
  COHORT_RETURN_IF_ERROR(AllreduceAsync(data, count, dtype, op));
  if (count == 0) return absl::OkStatus();
  return impl_->AwaitStream("allreduce");
}

absl::Status NcclCommunicator::Broadcast(void* data, size_t bytes, int root) {
  COHORT_RETURN_IF_ERROR(impl_->Check("broadcast"));
  if (root < 0 || root >= impl_->size()) {
    return absl::InvalidArgumentError(absl::StrCat(impl_->Name("broadcast"), ": root ", root,
                                                   " is not a rank of ", impl_->size()));
  }
  if (bytes == 0) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(impl_->CheckDeviceBuffer("broadcast", data));
  COHORT_RETURN_IF_ERROR(FollowComputeStream());
  COHORT_RETURN_IF_ERROR(impl_->Enqueue("broadcast", [&] {
    return ncclBroadcast(data, data, bytes, ncclUint8, root, impl_->comm(), impl_->stream());
  }));
  return impl_->AwaitStream("broadcast");
}

absl::StatusOr<std::vector<std::string>> NcclCommunicator::Allgather(absl::string_view bytes) {
  COHORT_RETURN_IF_ERROR(impl_->Check("allgather"));
  const int n = impl_->size();
  if (n == 1) return std::vector<std::string>{std::string(bytes)};
  // The lengths first (one int64 per rank, in place in the scratch), then the strings, each
  // padded to the longest, in place in the staging buffer.
  std::vector<int64_t> lengths(n);
  lengths[impl_->rank()] = static_cast<int64_t>(bytes.size());
  char* slots = impl_->scratch();
  COHORT_RETURN_IF_ERROR(impl_->CopyAsync("allgather", slots + 8 * impl_->rank(),
                                          &lengths[impl_->rank()], 8, cudaMemcpyHostToDevice));
  COHORT_RETURN_IF_ERROR(impl_->Enqueue("allgather (lengths)", [&] {
    return ncclAllGather(slots + 8 * impl_->rank(), slots, 1, ncclInt64, impl_->comm(),
                         impl_->stream());
  }));
  COHORT_RETURN_IF_ERROR(impl_->AwaitStream("allgather (lengths)"));
  COHORT_RETURN_IF_ERROR(
      impl_->CopyAsync("allgather", lengths.data(), slots, 8 * n, cudaMemcpyDeviceToHost));
  COHORT_RETURN_IF_ERROR(impl_->AwaitStream("allgather (lengths)"));
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<char> all(longest * n);
  if (longest > 0) {
    COHORT_ASSIGN_OR_RETURN(char* staging, impl_->Staging("allgather", longest * n));
    char* mine = staging + longest * impl_->rank();
    COHORT_RETURN_IF_ERROR(
        impl_->CopyAsync("allgather", mine, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    COHORT_RETURN_IF_ERROR(impl_->Enqueue("allgather", [&] {
      return ncclAllGather(mine, staging, longest, ncclUint8, impl_->comm(), impl_->stream());
    }));
    COHORT_RETURN_IF_ERROR(impl_->AwaitStream("allgather"));
    COHORT_RETURN_IF_ERROR(
        impl_->CopyAsync("allgather", all.data(), staging, all.size(), cudaMemcpyDeviceToHost));
    COHORT_RETURN_IF_ERROR(impl_->AwaitStream("allgather"));
  }
  std::vector<std::string> out;
  out.reserve(n);
  for (int r = 0; r < n; ++r) out.emplace_back(all.data() + r * longest, lengths[r]);
  return out;
}

absl::StatusOr<std::vector<std::string>> NcclCommunicator::Gather(absl::string_view bytes,
                                                                  int root) {
  COHORT_RETURN_IF_ERROR(impl_->Check("gather"));
  if (root < 0 || root >= impl_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(impl_->Name("gather"), ": root ", root, " is not a rank of ", impl_->size()));
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> all, Allgather(bytes));
  if (impl_->rank() != root) all.clear();
  return all;
}

absl::Status NcclCommunicator::Barrier() {
  COHORT_RETURN_IF_ERROR(impl_->Check("barrier"));
  if (impl_->size() == 1) return absl::OkStatus();
  COHORT_RETURN_IF_ERROR(impl_->Enqueue("barrier", [&] {
    return ncclAllReduce(impl_->scratch(), impl_->scratch(), 1, ncclInt32, ncclSum, impl_->comm(),
                         impl_->stream());
  }));
  return impl_->AwaitStream("barrier");
}

absl::Status NcclCommunicator::WaitForEvent(cudaEvent_t event) {
  COHORT_RETURN_IF_ERROR(impl_->Check("wait for event"));
  return impl_->Fail(
      CudaStatus("cudaStreamWaitEvent", cudaStreamWaitEvent(impl_->stream(), event, 0)));
}

absl::Status NcclCommunicator::FollowComputeStream() {
  COHORT_RETURN_IF_ERROR(impl_->Check("follow the compute stream"));
  COHORT_RETURN_IF_ERROR(
      impl_->Fail(CudaStatus("cudaEventRecord (default stream)",
                             cudaEventRecord(impl_->compute_done(), cudaStreamLegacy))));
  return impl_->Fail(CudaStatus("cudaStreamWaitEvent",
                                cudaStreamWaitEvent(impl_->stream(), impl_->compute_done(), 0)));
}

absl::Status NcclCommunicator::RecordEvent(cudaEvent_t event) {
  COHORT_RETURN_IF_ERROR(impl_->Check("record event"));
  return impl_->Fail(CudaStatus("cudaEventRecord", cudaEventRecord(event, impl_->stream())));
}

absl::Status NcclCommunicator::Synchronize(absl::string_view what) {
  COHORT_RETURN_IF_ERROR(impl_->Check(what));
  return impl_->AwaitStream(what);
}

}  // namespace cohort::comm
