#include "comm/shm_communicator.h"

// Scaffolding: replaced by the real transport.
namespace cohort::comm {

class ShmCommunicator::Impl {};

absl::StatusOr<std::unique_ptr<ShmCommunicator>> ShmCommunicator::Create(Group group,
                                                                   absl::Duration timeout) {
  return absl::UnimplementedError("shm transport not built yet");
}
ShmCommunicator::ShmCommunicator(Topology topology, std::unique_ptr<Impl> impl)
    : Communicator(std::move(topology)), impl_(std::move(impl)) {}
ShmCommunicator::~ShmCommunicator() = default;
absl::Status ShmCommunicator::Allreduce(void*, size_t, DataType, ReduceOp) { return absl::UnimplementedError(""); }
absl::Status ShmCommunicator::Broadcast(void*, size_t, int) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> ShmCommunicator::Allgather(absl::string_view) { return absl::UnimplementedError(""); }
absl::StatusOr<std::vector<std::string>> ShmCommunicator::Gather(absl::string_view, int) { return absl::UnimplementedError(""); }
absl::Status ShmCommunicator::Barrier() { return absl::UnimplementedError(""); }
}  // namespace cohort::comm
namespace cohort::comm {
size_t ShmCommunicator::SliceBegin(size_t count, int size, int slice) { return count * slice / size; }
absl::Status ShmCommunicator::ReduceScatter(void*, size_t, DataType) { return absl::UnimplementedError(""); }
absl::Status ShmCommunicator::AllgatherSlices(void*, size_t, DataType) { return absl::UnimplementedError(""); }
}  // namespace cohort::comm
