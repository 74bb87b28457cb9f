#pragma once
// NcclCommunicator: collectives on CUDA device buffers with NCCL, one GPU per rank. Built only
// with COHORT_CUDA (cmake/cohort_cuda.cmake); like the rest of comm it knows nothing of
// LibTorch: buffers are raw device pointers. NCCL is itself topology-aware (NVLink and PCIe
// inside a machine, InfiniBand or sockets between machines, rings and trees over both), so one
// communicator serves every placement that the CPU transports split into shm/gloo/hierarchical.
//
// Buffers: Allreduce and Broadcast take device memory (cudaMalloc'd on this communicator's
// device, or managed memory); a host pointer is InvalidArgument. Both first make the
// communicator's stream wait for the device's compute stream (FollowComputeStream), so they see
// what LibTorch's kernels wrote before the call, as torch.distributed's NCCL collectives do. The
// byte-string collectives (Allgather, Gather) take host strings and stage them through device
// memory. Each synchronous call returns once its work on stream() has completed; the *Async calls
// below only enqueue, for the gradient reducer, which orders them after its compute with events.
//
// Set-up: rank 0 creates the ncclUniqueId and passes it through the group's rendezvous store;
// every rank then creates its NCCL communicator in NCCL's nonblocking mode and polls it, so that
// set-up too has a deadline (the rendezvous timeout). A non-empty Topology::network_interface
// becomes NCCL_SOCKET_IFNAME unless that is set (process-wide: NCCL reads it at set-up).
//
// Failure: every wait polls the stream, NCCL's asynchronous error and the rendezvous failure
// notice against the deadline (Options::timeout). A dead peer (the rendezvous notice names it)
// is Unavailable; NCCL's own errors are Unavailable (a remote or system error) or Internal; a
// stall is DeadlineExceeded naming the ranks that did not time out in the same collective. The
// first failure aborts the NCCL communicator (ncclCommAbort: kernels stuck waiting for a peer
// are stopped) and leaves the cause in the group's store for the peers; every later call
// returns that error.
//
// Thread-compatible (see Communicator): one thread at a time, whichever it is; the CUDA device
// is set on the calling thread by every call.

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/comm/communicator.h"
#include "comm/rendezvous.h"

namespace cohort::comm {

class NcclCommunicator : public Communicator {
 public:
  struct Options {
    // The CUDA device of this rank (an ordinal among the visible devices).
    int device = 0;
    // Deadline of NCCL's set-up (the peers' arrival included).
    absl::Duration init_timeout = absl::Seconds(120);
    // Deadline of every collective and of Synchronize.
    absl::Duration timeout = absl::Seconds(300);
  };

  // Sets up the NCCL communicator of `group` on `options.device`. Errors: InvalidArgument for a
  // bad group or device; Unavailable when CUDA or NCCL fail (the message says which call and
  // NCCL's reason) or a peer died; DeadlineExceeded naming the ranks that never arrived.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(Group group,
                                                                  const Options& options);
  // The device of this worker when the caller names none: device 0 when one GPU is visible
  // (cohort-launch --gpus makes each worker's GPU its only one), else the local rank's.
  // FailedPrecondition when the machine shows fewer GPUs than the local rank needs, naming the
  // counts and CUDA_VISIBLE_DEVICES; Unavailable when CUDA cannot count its devices (no driver).
  static absl::StatusOr<int> DefaultDevice(const Topology& topology);

  // Finalizes the NCCL communicator when it is healthy and idle, else aborts it.
  ~NcclCommunicator() override;

  absl::string_view transport() const override { return "nccl"; }
  absl::Status Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) override;
  absl::Status Broadcast(void* data, size_t bytes, int root) override;
  absl::StatusOr<std::vector<std::string>> Allgather(absl::string_view bytes) override;
  // Built on Allgather: every rank receives the strings, only `root` keeps them (the object
  // collectives are small; a rooted NCCL gather would need n point-to-point calls).
  absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root) override;
  absl::Status Barrier() override;
  bool device_buffers() const override { return true; }
  // An event recorded on the legacy default stream, waited for by stream().
  absl::Status FollowComputeStream() override;

  // The stream every collective of this communicator runs on (owned by it, non-blocking with
  // respect to the legacy default stream).
  cudaStream_t stream() const;
  int device() const;

  // Makes later work on stream() wait for `event` (recorded by the caller on its compute
  // stream, e.g. once a gradient bucket is filled). Does not block the host.
  absl::Status WaitForEvent(cudaEvent_t event);
  // Enqueues an in-place allreduce of device memory on stream() and returns without waiting
  // for it; same arguments as Allreduce. Its completion: Synchronize, or RecordEvent and let
  // another stream wait for that event.
  absl::Status AllreduceAsync(void* data, size_t count, DataType dtype, ReduceOp op);
  // Records `event` on stream() after everything enqueued so far.
  absl::Status RecordEvent(cudaEvent_t event);
  // Waits until everything enqueued on stream() has completed, at most the collective timeout;
  // `what` names the work in the error ("allreduce of bucket 3").
  absl::Status Synchronize(absl::string_view what);

 private:
  class Impl;
  NcclCommunicator(Topology topology, std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm
