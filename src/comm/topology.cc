#include "cohort/comm/topology.h"

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/env.h"
#include "wire/launch_env.h"

namespace cohort::comm {
namespace {

bool IsSet(const char* name) { return !env::GetOr(name, "").empty(); }

absl::Status Require(bool ok, std::string message) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(std::move(message));
}

// The ranks from the first launcher whose rank variable is set: cohort-launch (`launch`), then
// torchrun, OpenMPI, Slurm. None: t keeps rank 0 of 1 from "none".
absl::Status FillRanks(const wire::LaunchEnv& launch, Topology& t) {
  std::optional<wire::WorkerRanks> ranks = launch.ranks;
  const char* source = wire::kCohortRankVariables.launcher;
  for (const wire::RankVariables* names :
       {&wire::kTorchrunRankVariables, &wire::kOpenMpiRankVariables, &wire::kSlurmRankVariables}) {
    if (ranks) break;
    COHORT_ASSIGN_OR_RETURN(ranks, wire::ReadRanks(*names, env::Get));
    source = names->launcher;
  }
  if (!ranks) return absl::OkStatus();
  t.source = source;
  t.rank = ranks->rank;
  t.size = ranks->size;
  t.local_rank = ranks->local_rank;
  t.local_size = ranks->local_size;
  t.cross_rank = ranks->cross_rank;
  t.cross_size = ranks->cross_size;
  return absl::OkStatus();
}

// MASTER_PORT + 1 (torchrun runs its own store on MASTER_PORT); nullopt when unset.
absl::StatusOr<std::optional<int>> PortAfterMasterPort() {
  const std::string text = env::GetOr("MASTER_PORT", "");
  if (text.empty()) return std::optional<int>();
  int port = 0;
  if (!absl::SimpleAtoi(text, &port) || port < 0 || port > 65534) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MASTER_PORT must be an integer in [0, 65534], got '", text.substr(0, 200), "'"));
  }
  return std::optional<int>(port + 1);
}

}  // namespace

std::string Topology::ToString() const {
  return absl::StrCat("rank ", rank, "/", size, " (local ", local_rank, "/", local_size,
                      ", machine ", cross_rank, "/", cross_size, "; rendezvous ", chief_addr, ":",
                      rendezvous_port, "; from ", source, ")");
}

absl::StatusOr<Topology> TopologyFromEnv() {
  COHORT_ASSIGN_OR_RETURN(wire::LaunchEnv launch, wire::LaunchEnv::FromProcessEnv());
  Topology t;
  COHORT_RETURN_IF_ERROR(FillRanks(launch, t));
  const bool cohort_launched = launch.ranks.has_value();

  // Where the rendezvous store is. Foreign launchers give MASTER_ADDR/MASTER_PORT; torchrun
  // runs its own store on MASTER_PORT, so ours defaults to MASTER_PORT + 1.
  t.chief_addr =
      launch.chief_addr.empty() ? env::GetOr("MASTER_ADDR", "127.0.0.1") : launch.chief_addr;
  std::optional<int> port = launch.rendezvous_port;
  if (!port.has_value()) {
    COHORT_ASSIGN_OR_RETURN(port, PortAfterMasterPort());
  }
  if (t.size > 1) {
    COHORT_RETURN_IF_ERROR(Require(
        port.has_value(),
        absl::StrCat("no rendezvous port for a ", t.size, "-worker job started by ", t.source,
                     ": set COHORT_RENDEZVOUS_PORT (or MASTER_PORT) and COHORT_CHIEF_ADDR (or "
                     "MASTER_ADDR), or start the workers with cohort-launch")));
    COHORT_RETURN_IF_ERROR(Require(
        t.cross_size == 1 || !launch.chief_addr.empty() || IsSet("MASTER_ADDR"),
        absl::StrCat("a job across ", t.cross_size,
                     " machines needs COHORT_CHIEF_ADDR (or MASTER_ADDR) naming rank 0's host")));
  }
  t.rendezvous_port = port.value_or(0);
  // cohort-launch hosts the store itself (so it outlives any worker); under other launchers
  // rank 0 hosts it. COHORT_HOST_STORE=1 forces the latter.
  t.host_store = t.rank == 0 && (!cohort_launched || launch.host_store);
  t.network_interface = launch.network_interface.empty()
                            ? env::GetOr("DET_DTRAIN_NETWORK_INTERFACE", "")
                            : launch.network_interface;
  t.collective_timeout = launch.collective_timeout.value_or(t.collective_timeout);
  t.rendezvous_timeout = launch.rendezvous_timeout.value_or(t.rendezvous_timeout);
  return t;
}

}  // namespace cohort::comm
