#pragma once
// GlooCommunicator: collectives over TCP with Gloo (ring allreduce: each rank sends and
// receives 2(n-1)/n of the buffer), for ranks on different machines. The group's members find
// each other through the rendezvous store (a gloo::rendezvous::Store adapter over Store).
//
// Network interface: Group's topology names one (COHORT_NETWORK_INTERFACE); otherwise the
// address used is the one this host uses to reach the rendezvous store, which all machines share.
//
// fp16 sums use a vectorized reduction (Debian's Gloo adds fp16 one element at a time).
// Failure: a dead peer surfaces as a broken connection at once, or through the rendezvous's
// failure notice; the error names the rank. Thread-compatible (see Communicator).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "comm/communicator.h"
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
  class Impl;
  GlooCommunicator(Topology topology, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm
