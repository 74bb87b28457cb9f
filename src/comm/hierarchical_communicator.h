#pragma once
// HierarchicalCommunicator: for several machines with several ranks each. Allreduce is a local
// reduce-scatter over shared memory, a cross-machine allreduce of each slice among the ranks
// with the same local rank (Gloo), and a local allgather. Other collectives run over the
// world's Gloo group. The first failure of any step breaks the communicator: the Gloo groups are
// aborted with that cause (so peers blocked in them report it rather than a closed connection)
// and every later call returns it. Thread-compatible (see Communicator).

#include <memory>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "comm/gloo_communicator.h"
#include "comm/rendezvous.h"
#include "comm/shm_communicator.h"

namespace cohort::comm {

class HierarchicalCommunicator : public Communicator {
 public:
  // `name` prefixes the store keys of the three groups it forms (local, cross, world).
  static absl::StatusOr<std::unique_ptr<HierarchicalCommunicator>> Create(
      std::shared_ptr<Rendezvous> rendezvous, const std::string& name, absl::Duration timeout);

  absl::string_view transport() const override { return "hierarchical"; }
  absl::Status Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) override;
  absl::Status Broadcast(void* data, size_t bytes, int root) override;
  absl::StatusOr<std::vector<std::string>> Allgather(absl::string_view bytes) override;
  absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root) override;
  absl::Status Barrier() override;

 private:
  HierarchicalCommunicator(Topology topology, std::unique_ptr<ShmCommunicator> local,
                           std::unique_ptr<GlooCommunicator> cross,
                           std::unique_ptr<GlooCommunicator> world);
  // Records the first failure, aborts the Gloo groups with it, and returns it.
  absl::Status Fail(absl::Status status);
  std::unique_ptr<ShmCommunicator> local_;
  std::unique_ptr<GlooCommunicator> cross_;
  std::unique_ptr<GlooCommunicator> world_;
  absl::Status error_;
};

}  // namespace cohort::comm
