#include "comm/hierarchical_communicator.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "comm/internal/chunk_pipeline.h"
#include "comm/internal/reduce_kernels.h"

namespace cohort::comm {
namespace {

// The global rank of every (cross_rank, local_rank) position, learned through the store so that
// error messages name the right ranks whatever order the launcher numbered them in.
absl::StatusOr<std::vector<std::vector<int>>> ExchangeRankLayout(const Rendezvous& rendezvous,
                                                                 const std::string& name) {
  const Topology& t = rendezvous.topology();
  auto key = [&](int cross, int local) {
    return absl::StrCat(name, "/layout/", cross, "/", local);
  };
  COHORT_RETURN_IF_ERROR(
      rendezvous.store()->Set(key(t.cross_rank, t.local_rank), std::to_string(t.rank)));
  std::vector<std::vector<int>> layout(t.cross_size, std::vector<int>(t.local_size, -1));
  layout[t.cross_rank][t.local_rank] = t.rank;
  auto fetch = [&](int cross, int local) -> absl::Status {
    if (layout[cross][local] >= 0) return absl::OkStatus();
    COHORT_ASSIGN_OR_RETURN(std::string value,
                            rendezvous.store()->Get(key(cross, local), t.rendezvous_timeout));
    if (!absl::SimpleAtoi(value, &layout[cross][local])) {
      return absl::InternalError(absl::StrCat("bad rank layout entry '", value, "'"));
    }
    return absl::OkStatus();
  };
  for (int local = 0; local < t.local_size; ++local) {
    COHORT_RETURN_IF_ERROR(fetch(t.cross_rank, local));
  }
  for (int cross = 0; cross < t.cross_size; ++cross) {
    COHORT_RETURN_IF_ERROR(fetch(cross, t.local_rank));
  }
  return layout;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HierarchicalCommunicator>> HierarchicalCommunicator::Create(
    std::shared_ptr<Rendezvous> rendezvous, const std::string& name, absl::Duration timeout) {
  const Topology& t = rendezvous->topology();
  if (t.local_size * t.cross_size != t.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hierarchical transport needs the same number of ranks on every machine: ", t.size,
        " ranks is not ", t.cross_size, " machines x ", t.local_size, " local ranks"));
  }
  auto layout = ExchangeRankLayout(*rendezvous, name);
  if (!layout.ok()) {
    return Annotate(layout.status(),
                    absl::StrCat("rank ", t.rank, " learning the ranks of its machine"));
  }

  Group local;
  local.rendezvous = rendezvous;
  local.prefix = absl::StrCat(name, "/local/", t.cross_rank);
  local.rank = t.local_rank;
  local.size = t.local_size;
  local.global_ranks = (*layout)[t.cross_rank];

  Group cross;
  cross.rendezvous = rendezvous;
  cross.prefix = absl::StrCat(name, "/cross/", t.local_rank);
  cross.rank = t.cross_rank;
  cross.size = t.cross_size;
  for (int c = 0; c < t.cross_size; ++c) cross.global_ranks.push_back((*layout)[c][t.local_rank]);

  Group world;
  world.rendezvous = rendezvous;
  world.prefix = absl::StrCat(name, "/world");
  world.rank = t.rank;
  world.size = t.size;
  for (int r = 0; r < t.size; ++r) world.global_ranks.push_back(r);

  // Every rank creates the three in the same order, so no rank waits on a peer that is
  // waiting on another group.
  COHORT_ASSIGN_OR_RETURN(auto local_comm, ShmCommunicator::Create(std::move(local), timeout));
  COHORT_ASSIGN_OR_RETURN(auto cross_comm, GlooCommunicator::Create(std::move(cross), timeout));
  COHORT_ASSIGN_OR_RETURN(auto world_comm, GlooCommunicator::Create(std::move(world), timeout));
  return std::unique_ptr<HierarchicalCommunicator>(new HierarchicalCommunicator(
      t, std::move(local_comm), std::move(cross_comm), std::move(world_comm)));
}

HierarchicalCommunicator::HierarchicalCommunicator(Topology topology,
                                                   std::unique_ptr<ShmCommunicator> local,
                                                   std::unique_ptr<GlooCommunicator> cross,
                                                   std::unique_ptr<GlooCommunicator> world)
    : Communicator(std::move(topology)),
      local_(std::move(local)),
      cross_(std::move(cross)),
      world_(std::move(world)) {}

absl::Status HierarchicalCommunicator::Fail(absl::Status status) {
  if (error_.ok()) {
    error_ = status;
    // Peers blocked in a Gloo step with this rank stop waiting and report this cause.
    cross_->Abort(status);
    world_->Abort(status);
  }
  return error_;
}

// Buffers above this many bytes are reduced in chunks of it, pipelined: while the network
// allreduces chunk i (on a thread of its own), the machine's ranks reduce-scatter chunk i + 1 and
// allgather chunk i - 1 in shared memory, so the memory phases hide behind the network's instead
// of adding to it (2 machines x 2 ranks at 5 Gbit/s, 64 MiB: see docs/performance.md).
constexpr size_t kPipelineChunkBytes = 8u << 20;

absl::Status HierarchicalCommunicator::Allreduce(void* data, size_t count, DataType dtype,
                                                 ReduceOp op) {
  if (!error_.ok()) return error_;
  if (count == 0) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("hierarchical allreduce: data is null");
  const size_t element = DataTypeSize(dtype);
  const size_t chunk = std::max<size_t>(1, kPipelineChunkBytes / element);
  char* bytes = static_cast<char*>(data);
  std::vector<std::pair<size_t, size_t>> chunks;  // (first element, count)
  for (size_t at = 0; at < count; at += chunk) chunks.emplace_back(at, std::min(chunk, count - at));
  // The cross-machine allreduce of each chunk runs on the pipeline's thread, one chunk at a
  // time and in order on every rank; the shared-memory phases stay on this thread, in the same
  // order on every local rank.
  auto cross = [&](size_t i) {
    const auto [first, n] = chunks[i];
    const size_t begin = ShmCommunicator::SliceBegin(n, topology_.local_size, topology_.local_rank);
    const size_t end =
        ShmCommunicator::SliceBegin(n, topology_.local_size, topology_.local_rank + 1);
    // Ranks with the same local rank hold the same slice: allreduce it across machines.
    return cross_->Allreduce(bytes + (first + begin) * element, end - begin, dtype, ReduceOp::kSum);
  };
  absl::Status status = internal::RunChunkPipeline(
      chunks.size(),
      [&](size_t i) {
        return local_->ReduceScatter(bytes + chunks[i].first * element, chunks[i].second, dtype);
      },
      cross,
      [&](size_t i) {
        return local_->AllgatherSlices(bytes + chunks[i].first * element, chunks[i].second, dtype);
      });
  if (!status.ok()) return Fail(status);
  if (op == ReduceOp::kAverage) internal::Divide(data, count, dtype, size());
  return absl::OkStatus();
}

absl::Status HierarchicalCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (!error_.ok()) return error_;
  absl::Status status = world_->Broadcast(data, bytes, root);
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) return Fail(status);
  return status;
}

absl::StatusOr<std::vector<std::string>> HierarchicalCommunicator::Allgather(
    absl::string_view bytes) {
  if (!error_.ok()) return error_;
  auto gathered = world_->Allgather(bytes);
  if (!gathered.ok()) return Fail(gathered.status());
  return gathered;
}

absl::StatusOr<std::vector<std::string>> HierarchicalCommunicator::Gather(absl::string_view bytes,
                                                                          int root) {
  if (!error_.ok()) return error_;
  auto gathered = world_->Gather(bytes, root);
  if (!gathered.ok() && gathered.status().code() != absl::StatusCode::kInvalidArgument) {
    return Fail(gathered.status());
  }
  return gathered;
}

absl::Status HierarchicalCommunicator::Barrier() {
  if (!error_.ok()) return error_;
  absl::Status status = world_->Barrier();
  if (!status.ok()) return Fail(status);
  return status;
}

}  // namespace cohort::comm
