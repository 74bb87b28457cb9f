#include "comm/hierarchical_communicator.h"

// Scaffolding: replaced by the real transport.
namespace cohort::comm {

absl::StatusOr<std::unique_ptr<HierarchicalCommunicator>> HierarchicalCommunicator::Create(
    std::shared_ptr<Rendezvous>, const std::string&, absl::Duration) {
  return absl::UnimplementedError("hierarchical transport not built yet");
}
absl::Status HierarchicalCommunicator::Allreduce(void*, size_t, DataType, ReduceOp) { return absl::UnimplementedError(""); }
absl::Status HierarchicalCommunicator::Broadcast(void*, size_t, int) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> HierarchicalCommunicator::Allgather(absl::string_view) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> HierarchicalCommunicator::Gather(absl::string_view, int) { return absl::UnimplementedError(""); }
absl::Status HierarchicalCommunicator::Barrier() { return absl::UnimplementedError(""); }
}  // namespace cohort::comm
