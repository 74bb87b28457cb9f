#pragma once
// CreateCommunicator: the one entry point that turns a worker's topology into a Communicator,
// choosing the transport from where the ranks are (or as overridden for tests and benchmarks).
//
//   all ranks on one machine           -> ShmCommunicator   ("shm")
//   one rank per machine               -> GlooCommunicator  ("gloo")
//   several machines, several ranks    -> HierarchicalCommunicator ("hierarchical")
//   device buffers (GPU), anywhere     -> NcclCommunicator  ("nccl"; only in a build with
//                                         -DCOHORT_CUDA=ON, docs/design/0013-gpus.md)
//
// The CPU transports take host buffers; "nccl" takes CUDA device buffers for Allreduce and
// Broadcast (host strings for the byte-string collectives), one GPU per rank.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(auto comm, comm::CreateCommunicatorFromEnv({}));
//   COHORT_RETURN_IF_ERROR(comm->Allreduce(grads, n, comm::DataType::kFloat32,
//                                          comm::ReduceOp::kAverage));

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cohort/comm/communicator.h"

namespace cohort::comm {

// The job's rendezvous (comm/rendezvous.h, internal to Cohort): user programs never hold one;
// they call CreateCommunicatorFromEnv, or let the Core API's Init form the communicator.
class Rendezvous;

enum class Transport { kAuto, kShm, kGloo, kHierarchical, kNccl };

absl::string_view TransportName(Transport transport);
// "auto", "shm", "gloo", "hierarchical", "nccl"; anything else is InvalidArgument listing the
// choices. ("nccl" parses in every build; a CPU-only build refuses it in CreateCommunicator.)
absl::StatusOr<Transport> ParseTransport(absl::string_view name);

// True when this build has the NCCL transport (-DCOHORT_CUDA=ON).
bool HaveNccl();

struct CommunicatorOptions {
  // kAuto picks from the topology (or device_buffers); COHORT_TRANSPORT overrides kAuto from
  // the environment.
  Transport transport = Transport::kAuto;
  // The caller's buffers are CUDA device memory: kAuto means "nccl" whatever COHORT_TRANSPORT
  // says, and a CPU transport is InvalidArgument.
  bool device_buffers = false;
  // "nccl": this worker's CUDA device; -1: NcclCommunicator::DefaultDevice (device 0 when the
  // worker sees one GPU, as under cohort-launch --gpus; else its local rank's).
  int cuda_device = -1;
  // Distinguishes several communicators of one job (their store keys must not collide).
  std::string name = "world";
};

// Creates this worker's communicator over `rendezvous` (which it keeps alive). Every rank of the
// job must call it with the same options. A transport that cannot serve the topology (shm with
// ranks on several machines) or the buffers (a CPU transport with device_buffers) is
// InvalidArgument saying why; "nccl" in a CPU-only build is FailedPrecondition naming the
// build option.
absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const CommunicatorOptions& options);

// CreateCommunicator for CUDA device buffers (transport "nccl"), named `name`: the
// communicator of weights and gradients that live on the workers' GPUs. FailedPrecondition in a
// CPU-only build.
absl::StatusOr<std::unique_ptr<Communicator>> CreateDeviceCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const std::string& name);

// A shared-memory communicator over the ranks of this machine (rank = local rank), for the
// Core API's per-machine collectives. Every rank on the machine must call it with the same
// `name`, which must differ from the names of the job's other communicators.
absl::StatusOr<std::unique_ptr<Communicator>> CreateLocalCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const std::string& name);

// TopologyFromEnv + Rendezvous::Join + CreateCommunicator.
absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicatorFromEnv(
    const CommunicatorOptions& options);

}  // namespace cohort::comm
