#include "comm/comm_factory.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "common/status_macros.h"
#include "comm/gloo_communicator.h"
#include "comm/hierarchical_communicator.h"
#include "comm/shm_communicator.h"

namespace cohort::comm {

absl::string_view TransportName(Transport transport) {
  switch (transport) {
    case Transport::kAuto: return "auto";
    case Transport::kShm: return "shm";
    case Transport::kGloo: return "gloo";
    case Transport::kHierarchical: return "hierarchical";
  }
  return "?";
}

absl::StatusOr<Transport> ParseTransport(absl::string_view name) {
  for (Transport t : {Transport::kAuto, Transport::kShm, Transport::kGloo,
                      Transport::kHierarchical}) {
    if (TransportName(t) == name) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown transport '", name, "': expected auto, shm, gloo or hierarchical"));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    std::shared_ptr<Rendezvous> rendezvous, const CommunicatorOptions& options) {
  const Topology& t = rendezvous->topology();
  Transport transport = options.transport;
  if (transport == Transport::kAuto) {
    std::string forced = env::GetOr("COHORT_TRANSPORT", "auto");
    COHORT_ASSIGN_OR_RETURN(transport, ParseTransport(forced));
  }
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
    case Transport::kAuto:
      break;
  }
  return absl::InternalError("no transport chosen");
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicatorFromEnv(
    const CommunicatorOptions& options) {
  COHORT_ASSIGN_OR_RETURN(Topology topology, TopologyFromEnv());
  COHORT_ASSIGN_OR_RETURN(auto rendezvous, Rendezvous::Join(topology));
  return CreateCommunicator(std::move(rendezvous), options);
}

}  // namespace cohort::comm
