#include "comm/gloo_communicator.h"

// Scaffolding: replaced by the real transport.
namespace cohort::comm {

class GlooCommunicator::Impl {};

absl::StatusOr<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(Group group,
                                                                   absl::Duration timeout) {
  return absl::UnimplementedError("gloo transport not built yet");
}
GlooCommunicator::GlooCommunicator(Topology topology, std::unique_ptr<Impl> impl)
    : Communicator(std::move(topology)), impl_(std::move(impl)) {}
GlooCommunicator::~GlooCommunicator() = default;
absl::Status GlooCommunicator::Allreduce(void*, size_t, DataType, ReduceOp) { return absl::UnimplementedError(""); }
absl::Status GlooCommunicator::Broadcast(void*, size_t, int) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> GlooCommunicator::Allgather(absl::string_view) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> GlooCommunicator::Gather(absl::string_view, int) { return absl::UnimplementedError(""); }
absl::Status GlooCommunicator::Barrier() { return absl::UnimplementedError(""); }
}  // namespace cohort::comm
