#include "comm/gloo_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "comm/internal/failure_causes.h"
#include "comm/internal/gloo_store_adapter.h"
#include "comm/internal/gloo_transport.h"
#include "comm/internal/reduce_kernels.h"
#include "common/logging.h"
#include "gloo/allgather.h"
#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/gather.h"
#include "gloo/rendezvous/context.h"

namespace cohort::comm {
namespace {

std::chrono::milliseconds ToMillis(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

// What the rendezvous failure callback (watcher thread) shares with the communicator. Held by
// shared_ptr so that a callback running late finds it alive.
struct GlooShared {
  std::mutex mu;
  std::shared_ptr<const internal::GlooPairSockets> sockets;  // null until connected
  bool shut_down = false;

  // Shuts every connection down so that blocked operations return at once.
  void ShutDown() {
    std::lock_guard<std::mutex> lock(mu);
    if (sockets == nullptr || shut_down) return;
    sockets->ShutDown();
    shut_down = true;
  }
};

}  // namespace

class GlooCommunicator::Impl {
 public:
  Impl(Group group, absl::Duration timeout)
      : group_(std::move(group)),
        timeout_(timeout),
        store_(group_.store()),
        causes_(group_, "gloo"),
        shared_(std::make_shared<GlooShared>()) {}

  // The failure callback may still run later: leave it nothing to shut down once the
  // connections are closed (their socket numbers may be reused).
  ~Impl() {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->sockets.reset();
  }

  int rank() const { return group_.rank; }
  int size() const { return group_.size; }
  const std::shared_ptr<gloo::rendezvous::Context>& context() const { return context_; }
  std::chrono::milliseconds op_timeout() const { return ToMillis(timeout_); }

  absl::Status Connect() {
    if (size() == 1) return absl::OkStatus();
    internal::IgnoreSigpipe();
    const Topology& t = group_.rendezvous->topology();
    const std::string who = absl::StrCat(group_.Name(rank()), " connecting Gloo group '",
                                         group_.prefix, "' (", size(), " ranks)");
    auto device =
        internal::CreateGlooTcpDevice(t.network_interface, t.chief_addr, t.rendezvous_port);
    if (!device.ok()) return Annotate(device.status(), who);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank(), size());
    // Gloo waits for the peers' addresses (and connections) with the context's timeout.
    context->setTimeout(ToMillis(t.rendezvous_timeout));
    internal::GlooStoreAdapter::Options options;
    options.timeout = t.rendezvous_timeout;
    options.interrupted = [rendezvous = group_.rendezvous] { return rendezvous->failure(); };
    internal::GlooStoreAdapter store(store_, std::move(options));
    try {
      context->connectFullMesh(store, *device);
    } catch (const internal::GlooStoreError& e) {
      return Annotate(e.status(), who);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat(who, ": ", e.what()));
    }
    context->setTimeout(op_timeout());
    auto sockets = internal::GlooPairSockets::Find(*context, *store_);
    if (!sockets.ok()) return Annotate(sockets.status(), who);
    if (sockets->found() != size() - 1) {
      COHORT_LOG(WARNING) << who << ": found the sockets of " << sockets->found() << " of "
                          << size() - 1 << " Gloo connections; a dead peer may then only be "
                          << "reported at the collective timeout";
    }
    context_ = context;
    peer_addresses_ = sockets->peer_addresses();
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->sockets =
          std::make_shared<const internal::GlooPairSockets>(std::move(sockets).value());
    }
    std::weak_ptr<GlooShared> weak = shared_;
    group_.rendezvous->OnFailure([weak] {
      if (auto shared = weak.lock()) shared->ShutDown();
    });
    return absl::OkStatus();
  }

  // OK when collective `op` may start; otherwise the error that broke the communicator (or
  // the rendezvous failure notice, which then breaks it).
  absl::Status Check(absl::string_view op) {
    if (!error_.ok()) return error_;
    absl::Status notice = group_.rendezvous->failure();
    if (!notice.ok()) {
      error_ = absl::UnavailableError(absl::StrCat(Where(op), ": ", notice.message()));
      shared_->ShutDown();
    }
    return error_;
  }

  // Runs one Gloo collective (`body`) and turns what it throws into the communicator's error.
  template <typename Body>
  absl::Status Run(absl::string_view op, Body&& body) {
    ++op_number_;
    try {
      body();
      return absl::OkStatus();
    } catch (const gloo::IoException& e) {
      return OnGlooError(op, e.what(), /*io=*/true);
    } catch (const std::exception& e) {
      return OnGlooError(op, e.what(), /*io=*/false);
    }
  }

  void Abort(const absl::Status& cause) {
    if (!error_.ok() || cause.ok()) return;
    error_ = cause;
    causes_.Publish(cause);
    shared_->ShutDown();
  }

 private:
  std::string Where(absl::string_view op) const {
    return absl::StrCat(group_.Name(rank()), ": gloo ", op);
  }

  absl::Status OnGlooError(absl::string_view op, const std::string& what, bool io) {
    absl::Status status;
    if (io && absl::StrContains(what, "Timed out")) {
      // The peers still alive time out too; find out which ranks did not, then cut the
      // connections so that a peer that has not timed out yet stops waiting.
      status = absl::DeadlineExceededError(
          absl::StrCat(Where(op), " (collective #", op_number_, ") timed out after ",
                       absl::FormatDuration(timeout_), causes_.MissingMembers(op_number_),
                       " [gloo: ", what, "]"));
      causes_.Publish(status);
      shared_->ShutDown();
    } else {
      shared_->ShutDown();
      absl::Status cause = causes_.Await();
      if (cause.code() == absl::StatusCode::kUnavailable && !group_.rendezvous->failure().ok()) {
        status = absl::UnavailableError(absl::StrCat(Where(op), ": ", cause.message()));
      } else if (!cause.ok()) {
        status = absl::Status(cause.code(),
                              absl::StrCat(Where(op), " abandoned because ", cause.message()));
      } else if (io) {
        const int peer = PeerIn(what);
        const std::string peer_name = peer >= 0 ? group_.Name(peer) : "a peer";
        status = absl::UnavailableError(
            absl::StrCat(Where(op), ": connection to ", peer_name, " lost [gloo: ", what, "]"));
        group_.rendezvous->ReportFailure(absl::StrCat(
            peer_name, " is unreachable (", group_.Name(rank()), " lost its Gloo connection in ",
            op, "): the process died, hung up or the network failed"));
        causes_.Publish(status);
      } else {
        status = absl::InternalError(absl::StrCat(Where(op), ": ", what));
        causes_.Publish(status);
      }
    }
    error_ = status;
    return status;
  }

  // The group rank whose address appears in Gloo's message, or -1.
  int PeerIn(const std::string& what) const {
    for (int i = 0; i < static_cast<int>(peer_addresses_.size()); ++i) {
      if (!peer_addresses_[i].empty() && absl::StrContains(what, peer_addresses_[i])) return i;
    }
    return -1;
  }

  Group group_;
  absl::Duration timeout_;
  std::shared_ptr<Store> store_;
  // Why a collective failed, told between the members (a rank whose connection broke waits
  // for it before blaming the connection itself).
  internal::FailureCauses causes_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::shared_ptr<GlooShared> shared_;
  std::vector<std::string> peer_addresses_;
  int64_t op_number_ = 0;
  absl::Status error_;
};

namespace {

template <typename Options>
void SetTypedOutput(Options& options, void* data, size_t count, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      options.setOutput(static_cast<float*>(data), count);
      return;
    case DataType::kFloat16:
      options.setOutput(static_cast<uint16_t*>(data), count);
      return;
    case DataType::kFloat64:
      options.setOutput(static_cast<double*>(data), count);
      return;
    case DataType::kInt32:
      options.setOutput(static_cast<int32_t*>(data), count);
      return;
    case DataType::kInt64:
      options.setOutput(static_cast<int64_t*>(data), count);
      return;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(Group group,
                                                                           absl::Duration timeout) {
  if (group.size < 1 || group.rank < 0 || group.rank >= group.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo group '", group.prefix, "': rank ", group.rank, " of ", group.size));
  }
  Topology topology = group.rendezvous->topology();
  auto impl = std::make_unique<Impl>(std::move(group), timeout);
  COHORT_RETURN_IF_ERROR(impl->Connect());
  return std::unique_ptr<GlooCommunicator>(
      new GlooCommunicator(std::move(topology), std::move(impl)));
}

GlooCommunicator::GlooCommunicator(Topology topology, std::unique_ptr<Impl> impl)
    : Communicator(std::move(topology)), impl_(std::move(impl)) {}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::Abort(const absl::Status& cause) { impl_->Abort(cause); }

absl::Status GlooCommunicator::Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) {
  COHORT_RETURN_IF_ERROR(impl_->Check("allreduce"));
  if (count == 0) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("gloo allreduce: data is null");
  if (impl_->size() == 1) return absl::OkStatus();  // the sum and mean over one rank
  COHORT_RETURN_IF_ERROR(impl_->Run("allreduce", [&] {
    gloo::AllreduceOptions options(impl_->context());
    SetTypedOutput(options, data, count, dtype);  // in place: the output is also the input
    // Gloo's own fp16 sum goes one element at a time; ours is vectorized.
    options.setReduceFunction([dtype](void* out, const void* a, const void* b, size_t n) {
      internal::Sum2(out, a, b, n, dtype);
    });
    options.setTimeout(impl_->op_timeout());
    gloo::allreduce(options);
  }));
  if (op == ReduceOp::kAverage) internal::Divide(data, count, dtype, impl_->size());
  return absl::OkStatus();
}

absl::Status GlooCommunicator::Broadcast(void* data, size_t bytes, int root) {
  COHORT_RETURN_IF_ERROR(impl_->Check("broadcast"));
  if (root < 0 || root >= impl_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo broadcast: root ", root, " is not a rank of ", impl_->size()));
  }
  if (bytes == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("gloo broadcast: data is null");
  return impl_->Run("broadcast", [&] {
    gloo::BroadcastOptions options(impl_->context());
    options.setOutput(static_cast<char*>(data), bytes);
    options.setRoot(root);
    options.setTimeout(impl_->op_timeout());
    gloo::broadcast(options);
  });
}

absl::StatusOr<std::vector<std::string>> GlooCommunicator::Allgather(absl::string_view bytes) {
  COHORT_RETURN_IF_ERROR(impl_->Check("allgather"));
  const int n = impl_->size();
  if (n == 1) return std::vector<std::string>{std::string(bytes)};
  std::vector<int64_t> lengths(n);
  int64_t mine = static_cast<int64_t>(bytes.size());
  COHORT_RETURN_IF_ERROR(impl_->Run("allgather (lengths)", [&] {
    gloo::AllgatherOptions options(impl_->context());
    options.setInput(&mine, 1);
    options.setOutput(lengths.data(), lengths.size());
    options.setTimeout(impl_->op_timeout());
    gloo::allgather(options);
  }));
  std::vector<size_t> counts(n);
  size_t total = 0, my_offset = 0;
  for (int i = 0; i < n; ++i) {
    counts[i] = static_cast<size_t>(lengths[i]);
    if (i == impl_->rank()) my_offset = total;
    total += counts[i];
  }
  std::vector<char> all(total);
  if (!bytes.empty()) std::memcpy(all.data() + my_offset, bytes.data(), bytes.size());
  if (total > 0) {
    COHORT_RETURN_IF_ERROR(impl_->Run("allgather", [&] {
      gloo::AllgathervOptions options(impl_->context());
      options.setOutput(all.data(), counts);  // no input: this rank's part is already in place
      options.setTimeout(impl_->op_timeout());
      gloo::allgatherv(options);
    }));
  }
  std::vector<std::string> out;
  out.reserve(n);
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    out.emplace_back(all.data() + offset, counts[i]);
    offset += counts[i];
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> GlooCommunicator::Gather(absl::string_view bytes,
                                                                  int root) {
  COHORT_RETURN_IF_ERROR(impl_->Check("gather"));
  const int n = impl_->size();
  if (root < 0 || root >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo gather: root ", root, " is not a rank of ", n));
  }
  if (n == 1) return std::vector<std::string>{std::string(bytes)};
  // Gloo's gather takes equal parts: learn the longest, pad every part to it.
  std::vector<int64_t> lengths(n);
  int64_t mine = static_cast<int64_t>(bytes.size());
  COHORT_RETURN_IF_ERROR(impl_->Run("gather (lengths)", [&] {
    gloo::AllgatherOptions options(impl_->context());
    options.setInput(&mine, 1);
    options.setOutput(lengths.data(), lengths.size());
    options.setTimeout(impl_->op_timeout());
    gloo::allgather(options);
  }));
  size_t longest = 0;
  for (int64_t length : lengths) longest = std::max(longest, static_cast<size_t>(length));
  const bool is_root = impl_->rank() == root;
  std::vector<char> part(longest);
  std::vector<char> all(is_root ? longest * n : 0);
  if (!bytes.empty()) std::memcpy(part.data(), bytes.data(), bytes.size());
  if (longest > 0) {
    COHORT_RETURN_IF_ERROR(impl_->Run("gather", [&] {
      gloo::GatherOptions options(impl_->context());
      options.setInput(part.data(), part.size());
      if (is_root) options.setOutput(all.data(), all.size());
      options.setRoot(root);
      options.setTimeout(impl_->op_timeout());
      gloo::gather(options);
    }));
  }
  std::vector<std::string> out;
  if (!is_root) return out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    out.emplace_back(all.data() + i * longest, static_cast<size_t>(lengths[i]));
  }
  return out;
}

absl::Status GlooCommunicator::Barrier() {
  COHORT_RETURN_IF_ERROR(impl_->Check("barrier"));
  if (impl_->size() == 1) return absl::OkStatus();
  return impl_->Run("barrier", [&] {
    gloo::BarrierOptions options(impl_->context());
    options.setTimeout(impl_->op_timeout());
    gloo::barrier(options);
  });
}

}  // namespace cohort::comm
