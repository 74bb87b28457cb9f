#pragma once
// ShmCommunicator: collectives between processes of one machine through a shared-memory
// segment per group. Local ranks reduce disjoint slices of each other's data, then copy the
// results back: memory bandwidth, not a network stack, is the limit.
//
// Waits are futex-based with deadlines; a dead peer (found through the rendezvous failure
// notice or its process exiting) fails pending collectives within seconds naming the rank.
// Thread-compatible (see Communicator).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "comm/internal/shm_tuning.h"
#include "comm/rendezvous.h"

namespace cohort::comm {

class ShmCommunicator : public Communicator {
 public:
  // Creates (group rank 0) or attaches to the group's segment. Every collective has `timeout`
  // as its deadline.
  static absl::StatusOr<std::unique_ptr<ShmCommunicator>> Create(Group group,
                                                                  absl::Duration timeout);
  ~ShmCommunicator() override;

  absl::string_view transport() const override { return "shm"; }
  absl::Status Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) override;
  absl::Status Broadcast(void* data, size_t bytes, int root) override;
  absl::StatusOr<std::vector<std::string>> Allgather(absl::string_view bytes) override;
  absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root) override;
  absl::Status Barrier() override;

  // Which allreduce path runs at which size and how waiters wait, the same on every rank; on
  // rank 0 also what was measured (internal/shm_tuning.h). Size 1: the constants.
  const internal::ShmTuning& tuning() const;

  // Building blocks for HierarchicalCommunicator. The `count` elements are split into size()
  // contiguous slices; slice i is [SliceBegin(count, i), SliceBegin(count, i + 1)).
  static size_t SliceBegin(size_t count, int size, int slice);
  // After ReduceScatter, this rank's slice of `data` holds the sum over local ranks.
  absl::Status ReduceScatter(void* data, size_t count, DataType dtype);
  // After AllgatherSlices, every rank's `data` holds every rank's own slice.
  absl::Status AllgatherSlices(void* data, size_t count, DataType dtype);

 private:
  class Impl;
  ShmCommunicator(Topology topology, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm
