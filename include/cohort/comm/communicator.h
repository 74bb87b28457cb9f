#pragma once
// Communicator: the collectives every distributed trial stands on, on raw buffers (no LibTorch
// here). One Communicator per worker process; all ranks must call the same collectives in the
// same order with matching arguments (counts, dtype, root).
//
// Implementations: ShmCommunicator (processes on one machine, shared memory),
// GlooCommunicator (Gloo over TCP, across machines), HierarchicalCommunicator (shared memory
// inside each machine + Gloo between machines). CreateCommunicator (cohort/comm/comm_factory.h) picks one
// from the topology.
//
// Failure semantics: every collective has a deadline (Options::timeout). When a peer process
// dies, pending and later collectives fail within seconds with Unavailable naming the rank;
// when a peer stalls, they fail at the deadline with DeadlineExceeded naming the missing ranks.
// After a failure the communicator is broken: every later call fails with the same error.
//
// Thread-safety: a Communicator is used by one thread at a time (the caller serializes);
// distinct Communicators may be used concurrently.

#include <cstddef>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cohort/comm/topology.h"

namespace cohort::comm {

enum class DataType { kFloat32, kFloat16, kFloat64, kInt32, kInt64 };
enum class ReduceOp { kSum, kAverage };

size_t DataTypeSize(DataType dtype);
absl::string_view DataTypeName(DataType dtype);            // "fp32", "fp16", ...
absl::StatusOr<DataType> ParseDataType(absl::string_view name);

class Communicator {
 public:
  virtual ~Communicator() = default;

  const Topology& topology() const { return topology_; }
  int rank() const { return topology_.rank; }
  int size() const { return topology_.size; }

  // "shm", "gloo" or "hierarchical".
  virtual absl::string_view transport() const = 0;

  // In place: data[i] becomes the sum (kAverage: the mean) over ranks of data[i], for
  // i < count. Integer averages round toward zero. count may be 0.
  virtual absl::Status Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) = 0;

  // Copies `bytes` bytes at `data` on rank `root` into `data` on every rank.
  virtual absl::Status Broadcast(void* data, size_t bytes, int root) = 0;

  // Every rank contributes one byte string (lengths may differ); every rank receives all of
  // them, indexed by rank.
  virtual absl::StatusOr<std::vector<std::string>> Allgather(absl::string_view bytes) = 0;

  // Like Allgather, but only `root` receives the strings; other ranks get an empty vector.
  virtual absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root) = 0;

  // Returns once every rank has entered Barrier.
  virtual absl::Status Barrier() = 0;

  // Whether Allreduce and Broadcast take device (GPU) memory (the "nccl" transport) rather than
  // host memory (every other transport).
  virtual bool device_buffers() const { return false; }

  // Device transports: makes this communicator's later collectives wait, on the device, for the
  // work enqueued so far on the device's compute stream (CUDA's legacy default stream, LibTorch's
  // default), e.g. the kernels that wrote a gradient bucket; the host does not wait. Allreduce
  // and Broadcast do this themselves first; it is for callers that enqueue work of their own
  // between. Host transports: nothing to order, OK.
  virtual absl::Status FollowComputeStream() { return absl::OkStatus(); }

 protected:
  explicit Communicator(Topology topology) : topology_(std::move(topology)) {}
  Topology topology_;
};

}  // namespace cohort::comm
