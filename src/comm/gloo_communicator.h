#pragma once
// GlooCommunicator: collectives over TCP with Gloo (ring allreduce: each rank sends and
// receives 2(n-1)/n of the buffer), for ranks on different machines. The group's members find
// each other through the rendezvous store (a gloo::rendezvous::Store adapter over Store).
//
// Network interface: Group's topology names one (COHORT_NETWORK_INTERFACE); otherwise the
// address used is the one this host uses to reach the rendezvous store, which all machines share.
//
// Process-wide effect: creating a GlooCommunicator of two or more ranks sets SIGPIPE to ignored
// unless the program handles it (Gloo writes with writev, so writing to a dead peer would
// otherwise kill this process before the error can be reported).
//
// fp16 sums use a vectorized reduction (Debian's Gloo adds fp16 one element at a time).
// Failure: a dead peer surfaces as a broken connection at once, or through the rendezvous's
// failure notice; the error names the rank. The first failure breaks the communicator: its
// connections are shut down (so the peers' pending collectives fail at once too) and the
// cause is left in the group's store, so that a peer whose connection was cut reports the
// cause (for example "rank 2: allreduce timed out ... waiting for rank 3") rather than a bare
// closed connection. Thread-compatible (see Communicator); rank() and size() are the job's
// (as for ShmCommunicator), the group may be a subset of it.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cohort/comm/communicator.h"
#include "comm/rendezvous.h"

namespace cohort::comm {

class GlooCommunicator : public Communicator {
 public:
  // Connects the full mesh of `group` within the rendezvous timeout; every collective then has
  // `timeout` as its deadline.
  static absl::StatusOr<std::unique_ptr<GlooCommunicator>> Create(Group group,
                                                                  absl::Duration timeout);
  ~GlooCommunicator() override;

  absl::string_view transport() const override { return "gloo"; }
  absl::Status Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) override;
  absl::Status Broadcast(void* data, size_t bytes, int root) override;
  absl::StatusOr<std::vector<std::string>> Allgather(absl::string_view bytes) override;
  absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root) override;
  absl::Status Barrier() override;

 private:
  friend class HierarchicalCommunicator;
  class Impl;
  // Breaks the communicator with `cause` (a failure of a sibling communicator of the same
  // collective, see HierarchicalCommunicator): publishes it to the group, shuts the
  // connections down, and makes every later call return `cause`. No-op if already broken.
  void Abort(const absl::Status& cause);

  GlooCommunicator(Topology topology, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm
