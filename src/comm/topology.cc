#include "cohort/comm/topology.h"

#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/env.h"

namespace cohort::comm {
namespace {

// The names of one launcher's variables.
struct Names {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
  const char* cross_rank;  // may be null: derived as rank / local_size
  const char* cross_size;  // may be null: derived as size / local_size
};

constexpr Names kCohort{"cohort",
                        "COHORT_RANK",
                        "COHORT_SIZE",
                        "COHORT_LOCAL_RANK",
                        "COHORT_LOCAL_SIZE",
                        "COHORT_CROSS_RANK",
                        "COHORT_CROSS_SIZE"};
constexpr Names kTorchrun{"torchrun",   "RANK",        "WORLD_SIZE", "LOCAL_RANK",
                          "LOCAL_WORLD_SIZE", "GROUP_RANK", nullptr};
constexpr Names kOpenMpi{"openmpi",
                         "OMPI_COMM_WORLD_RANK",
                         "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                         nullptr,
                         nullptr};
constexpr Names kSlurm{"slurm",     "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                       "SLURM_NTASKS_PER_NODE", "SLURM_NODEID", "SLURM_NNODES"};

bool IsSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// Reads an integer variable; SLURM_NTASKS_PER_NODE looks like "4(x2)", so a leading integer
// is accepted there.
absl::StatusOr<std::optional<int>> ReadInt(const char* name, bool leading_only = false) {
  if (!IsSet(name)) return std::optional<int>();
  std::string text = std::getenv(name);
  if (leading_only) {
    size_t end = 0;
    while (end < text.size() && isdigit(static_cast<unsigned char>(text[end]))) ++end;
    text = text.substr(0, end);
  }
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > (1 << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected a non-negative integer, got '",
                                                   std::getenv(name), "'"));
  }
  return std::optional<int>(static_cast<int>(value));
}

absl::Status Require(bool ok, std::string message) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(std::move(message));
}

absl::Status FillRanks(const Names& n, Topology& t) {
  COHORT_ASSIGN_OR_RETURN(auto rank, ReadInt(n.rank));
  COHORT_ASSIGN_OR_RETURN(auto size, ReadInt(n.size));
  COHORT_ASSIGN_OR_RETURN(auto local_rank, ReadInt(n.local_rank));
  COHORT_ASSIGN_OR_RETURN(auto local_size, ReadInt(n.local_size, /*leading_only=*/true));
  COHORT_RETURN_IF_ERROR(Require(rank.has_value() && size.has_value(),
                                 absl::StrCat(n.rank, " and ", n.size, " must both be set (",
                                              n.source, " launcher variables)")));
  t.source = n.source;
  t.rank = *rank;
  t.size = *size;
  COHORT_RETURN_IF_ERROR(Require(t.size >= 1, absl::StrCat(n.size, " must be >= 1, got ", t.size)));
  COHORT_RETURN_IF_ERROR(Require(
      t.rank < t.size, absl::StrCat(n.rank, "=", t.rank, " is not below ", n.size, "=", t.size)));
  t.local_size = local_size.value_or(t.size);
  t.local_rank = local_rank.value_or(t.rank % t.local_size);
  COHORT_RETURN_IF_ERROR(Require(t.local_size >= 1 && t.local_size <= t.size,
                                 absl::StrCat(n.local_size, "=", t.local_size, " must be in [1, ",
                                              n.size, "=", t.size, "]")));
  COHORT_RETURN_IF_ERROR(Require(t.local_rank < t.local_size,
                                 absl::StrCat(n.local_rank, "=", t.local_rank, " is not below ",
                                              n.local_size, "=", t.local_size)));
  std::optional<int> cross_rank, cross_size;
  if (n.cross_rank != nullptr) {
    COHORT_ASSIGN_OR_RETURN(cross_rank, ReadInt(n.cross_rank));
  }
  if (n.cross_size != nullptr) {
    COHORT_ASSIGN_OR_RETURN(cross_size, ReadInt(n.cross_size));
  }
  t.cross_size = cross_size.value_or((t.size + t.local_size - 1) / t.local_size);
  t.cross_rank = cross_rank.value_or(t.rank / t.local_size);
  COHORT_RETURN_IF_ERROR(Require(t.cross_rank < t.cross_size,
                                 absl::StrCat("cross rank ", t.cross_rank,
                                              " is not below cross size ", t.cross_size, " (",
                                              n.source, " launcher variables)")));
  return absl::OkStatus();
}

}  // namespace

std::string Topology::ToString() const {
  return absl::StrCat("rank ", rank, "/", size, " (local ", local_rank, "/", local_size,
                      ", machine ", cross_rank, "/", cross_size, "; rendezvous ", chief_addr, ":",
                      rendezvous_port, "; from ", source, ")");
}

absl::StatusOr<Topology> TopologyFromEnv() {
  Topology t;
  const Names* names = nullptr;
  for (const Names* n : {&kCohort, &kTorchrun, &kOpenMpi, &kSlurm}) {
    if (IsSet(n->rank)) {
      names = n;
      break;
    }
  }
  if (names != nullptr) COHORT_RETURN_IF_ERROR(FillRanks(*names, t));

  // Where the rendezvous store is. Foreign launchers give MASTER_ADDR/MASTER_PORT; torchrun
  // runs its own store on MASTER_PORT, so ours defaults to MASTER_PORT + 1.
  t.chief_addr = env::GetOr("COHORT_CHIEF_ADDR", env::GetOr("MASTER_ADDR", "127.0.0.1"));
  COHORT_ASSIGN_OR_RETURN(auto port, ReadInt("COHORT_RENDEZVOUS_PORT"));
  if (!port.has_value()) {
    COHORT_ASSIGN_OR_RETURN(auto master_port, ReadInt("MASTER_PORT"));
    if (master_port.has_value()) port = *master_port + 1;
  }
  bool cohort_launched = names == &kCohort;
  if (t.size > 1) {
    COHORT_RETURN_IF_ERROR(Require(
        port.has_value(),
        absl::StrCat("no rendezvous port for a ", t.size, "-worker job started by ", t.source,
                     ": set COHORT_RENDEZVOUS_PORT (or MASTER_PORT) and COHORT_CHIEF_ADDR (or "
                     "MASTER_ADDR), or start the workers with cohort-launch")));
    COHORT_RETURN_IF_ERROR(Require(
        t.cross_size == 1 || IsSet("COHORT_CHIEF_ADDR") || IsSet("MASTER_ADDR"),
        absl::StrCat("a job across ", t.cross_size,
                     " machines needs COHORT_CHIEF_ADDR (or MASTER_ADDR) naming rank 0's host")));
  }
  t.rendezvous_port = port.value_or(0);
  COHORT_RETURN_IF_ERROR(Require(t.rendezvous_port >= 0 && t.rendezvous_port <= 65535,
                                 absl::StrCat("rendezvous port ", t.rendezvous_port,
                                              " is not in 0-65535")));
  // cohort-launch hosts the store itself (so it outlives any worker); under other launchers
  // rank 0 hosts it. COHORT_HOST_STORE=1 forces the latter.
  t.host_store = t.rank == 0 && (!cohort_launched || env::GetOr("COHORT_HOST_STORE", "0") == "1");
  t.network_interface =
      env::GetOr("COHORT_NETWORK_INTERFACE", env::GetOr("DET_DTRAIN_NETWORK_INTERFACE", ""));
  COHORT_ASSIGN_OR_RETURN(t.collective_timeout,
                          env::GetSecondsOr("COHORT_COLLECTIVE_TIMEOUT", absl::Seconds(300)));
  COHORT_ASSIGN_OR_RETURN(t.rendezvous_timeout,
                          env::GetSecondsOr("COHORT_RENDEZVOUS_TIMEOUT", absl::Seconds(120)));
  return t;
}

}  // namespace cohort::comm
