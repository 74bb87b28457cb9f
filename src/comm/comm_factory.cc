#include "cohort/comm/comm_factory.h"

#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "comm/gloo_communicator.h"
#include "comm/hierarchical_communicator.h"
#include "comm/rendezvous.h"
#include "comm/shm_communicator.h"
#include "common/env.h"
#ifdef COHORT_WITH_CUDA
#include "comm/nccl_communicator.h"
#endif

namespace cohort::comm {

absl::string_view TransportName(Transport transport) {
  switch (transport) {
    case Transport::kAuto: return "auto";
    case Transport::kShm: return "shm";
    case Transport::kGloo: return "gloo";
    case Transport::kHierarchical: return "hierarchical";
    case Transport::kNccl: return "nccl";
  }
  return "?";
}

absl::StatusOr<Transport> ParseTransport(absl::string_view name) {
  for (Transport t : {Transport::kAuto, Transport::kShm, Transport::kGloo,
                      Transport::kHierarchical, Transport::kNccl}) {
    if (TransportName(t) == name) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown transport '", name, "': expected auto, shm, gloo, hierarchical or nccl"));
}

bool HaveNccl() {
#ifdef COHORT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

namespace {

// The transport the options and COHORT_TRANSPORT ask for (kAuto: choose from the topology).
absl::StatusOr<Transport> RequestedTransport(const CommunicatorOptions& options) {
  if (options.device_buffers) {
    if (options.transport == Transport::kAuto || options.transport == Transport::kNccl) {
      return Transport::kNccl;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "transport '", TransportName(options.transport),
        "' takes host buffers, but the caller's are on the GPU (device_buffers): use 'nccl' "
        "(or 'auto')"));
  }
  if (options.transport != Transport::kAuto) return options.transport;
  return ParseTransport(env::GetOr("COHORT_TRANSPORT", "auto"));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNccl(Group world, int cuda_device) {
#ifdef COHORT_WITH_CUDA
  const Topology& t = world.rendezvous->topology();
  NcclCommunicator::Options nccl;
  nccl.init_timeout = t.rendezvous_timeout;
  nccl.timeout = t.collective_timeout;
  if (cuda_device >= 0) {
    nccl.device = cuda_device;
  } else {
    COHORT_ASSIGN_OR_RETURN(nccl.device, NcclCommunicator::DefaultDevice(t));
  }
  return NcclCommunicator::Create(std::move(world), nccl);
#else
  return absl::FailedPreconditionError(
      "transport 'nccl' needs a GPU build of Cohort (cmake -DCOHORT_CUDA=ON, "
      "docs/design/0013-gpus.md); this one is CPU-only");
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const CommunicatorOptions& options) {
  const Topology& t = rendezvous->topology();
  COHORT_ASSIGN_OR_RETURN(Transport transport, RequestedTransport(options));
  if (transport == Transport::kAuto) {
    if (t.cross_size == 1) {
      transport = Transport::kShm;
    } else if (t.local_size == 1) {
      transport = Transport::kGloo;
    } else {
      transport = Transport::kHierarchical;
    }
  }
  Group world;
  world.rendezvous = rendezvous;
  world.prefix = absl::StrCat(options.name, "/", TransportName(transport));
  world.rank = t.rank;
  world.size = t.size;
  world.global_ranks.resize(t.size);
  std::iota(world.global_ranks.begin(), world.global_ranks.end(), 0);
  switch (transport) {
    case Transport::kShm:
      if (t.cross_size != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "transport 'shm' needs every rank on one machine, but this job spans ", t.cross_size,
            " machines: use 'gloo' or 'hierarchical' (or 'auto')"));
      }
      return ShmCommunicator::Create(std::move(world), t.collective_timeout);
    case Transport::kGloo:
      return GlooCommunicator::Create(std::move(world), t.collective_timeout);
    case Transport::kHierarchical:
      return HierarchicalCommunicator::Create(rendezvous, options.name, t.collective_timeout);
    case Transport::kNccl:
      return CreateNccl(std::move(world), options.cuda_device);
    case Transport::kAuto:
      break;
  }
  return absl::InternalError("no transport chosen");
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateDeviceCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const std::string& name) {
  return CreateCommunicator(std::move(rendezvous),
                            {.transport = Transport::kNccl, .device_buffers = true, .name = name});
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateLocalCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const std::string& name) {
  const Topology& t = rendezvous->topology();
  Group local;
  local.rendezvous = rendezvous;
  local.prefix = absl::StrCat(name, "/local/", t.cross_rank);
  local.rank = t.local_rank;
  local.size = t.local_size;
  local.global_ranks.assign(t.local_size, -1);
  local.global_ranks[t.local_rank] = t.rank;
  // The global rank of every local rank, for error messages that name the right worker.
  std::shared_ptr<Store> store = local.store();
  COHORT_RETURN_IF_ERROR(store->Set(absl::StrCat("global-rank/", t.local_rank),
                                    std::to_string(t.rank)));
  for (int r = 0; r < t.local_size; ++r) {
    if (r == t.local_rank) continue;
    COHORT_ASSIGN_OR_RETURN(std::string value,
                            store->Get(absl::StrCat("global-rank/", r), t.rendezvous_timeout));
    if (!absl::SimpleAtoi(value, &local.global_ranks[r])) {
      return absl::InternalError(absl::StrCat("bad global rank '", value, "' for local rank ", r));
    }
  }
  return ShmCommunicator::Create(std::move(local), t.collective_timeout);
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicatorFromEnv(
    const CommunicatorOptions& options) {
  COHORT_ASSIGN_OR_RETURN(Topology topology, TopologyFromEnv());
  COHORT_ASSIGN_OR_RETURN(auto rendezvous, Rendezvous::Join(topology));
  return CreateCommunicator(std::move(rendezvous), options);
}

}  // namespace cohort::comm
