#include "wire/launch_env.h"

#include <cctype>
#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "common/env.h"

namespace cohort::wire {
namespace {

constexpr size_t kShownBytes = 200;
constexpr int kMaxRankValue = 1 << 24;
constexpr int kMaxGpuId = 4095;

std::string Shown(const std::string& value) { return value.substr(0, kShownBytes); }

// The variable's value; empty when unset.
std::string Get(const EnvLookup& lookup, const char* name) {
  if (name == nullptr) return "";
  return lookup(name).value_or("");
}

// An integer in [0, max]; nullopt when unset.
absl::StatusOr<std::optional<int>> ReadInt(const EnvLookup& lookup, const char* name, int max,
                                           bool leading_only = false) {
  const std::string value = Get(lookup, name);
  if (value.empty()) return std::optional<int>();
  std::string text = value;
  if (leading_only) {
    size_t end = 0;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    text.resize(end);
  }
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(text, &parsed) || parsed < 0 || parsed > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be an integer in [0, ", max, "], got '", Shown(value), "'"));
  }
  return std::optional<int>(static_cast<int>(parsed));
}

// "1": true, "0" or unset: false.
absl::StatusOr<bool> ReadFlag(const EnvLookup& lookup, const char* name) {
  const std::string value = Get(lookup, name);
  if (value.empty() || value == "0") return false;
  if (value == "1") return true;
  return absl::InvalidArgumentError(
      absl::StrCat(name, " must be 0 or 1, got '", Shown(value), "'"));
}

// A positive, finite number of seconds; nullopt when unset.
absl::StatusOr<std::optional<absl::Duration>> ReadSeconds(const EnvLookup& lookup,
                                                          const char* name) {
  const std::string value = Get(lookup, name);
  if (value.empty()) return std::optional<absl::Duration>();
  double seconds = 0;
  if (!absl::SimpleAtod(value, &seconds) || !std::isfinite(seconds) || seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be a positive number of seconds, got '", Shown(value), "'"));
  }
  return std::optional<absl::Duration>(absl::Seconds(seconds));
}

absl::Status Require(bool ok, const std::string& message) {
  return ok ? absl::OkStatus() : absl::InvalidArgumentError(message);
}

// Fills the cross-machine rank and size, from their variables or derived from local_size.
absl::Status ReadCrossRanks(const RankVariables& names, const EnvLookup& lookup, WorkerRanks& r) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int> cross_rank,
                          ReadInt(lookup, names.cross_rank, kMaxRankValue));
  COHORT_ASSIGN_OR_RETURN(std::optional<int> cross_size,
                          ReadInt(lookup, names.cross_size, kMaxRankValue));
  r.cross_size = cross_size.value_or((r.size + r.local_size - 1) / r.local_size);
  r.cross_rank = cross_rank.value_or(r.rank / r.local_size);
  const std::string rank_name =
      cross_rank ? absl::StrCat(names.cross_rank, "=", r.cross_rank)
                 : absl::StrCat("cross rank ", r.cross_rank, " (rank / local size)");
  const std::string size_name =
      cross_size ? absl::StrCat(names.cross_size, "=", r.cross_size)
                 : absl::StrCat("cross size ", r.cross_size, " (machines of local size)");
  return Require(r.cross_rank < r.cross_size,
                 absl::StrCat(rank_name, " is not below ", size_name, " (", names.launcher,
                              " launcher variables)"));
}

}  // namespace

absl::StatusOr<std::optional<WorkerRanks>> ReadRanks(const RankVariables& names,
                                                     const EnvLookup& lookup) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int> rank, ReadInt(lookup, names.rank, kMaxRankValue));
  if (!rank) return std::optional<WorkerRanks>();
  COHORT_ASSIGN_OR_RETURN(std::optional<int> size, ReadInt(lookup, names.size, kMaxRankValue));
  COHORT_ASSIGN_OR_RETURN(std::optional<int> local_rank,
                          ReadInt(lookup, names.local_rank, kMaxRankValue));
  COHORT_ASSIGN_OR_RETURN(
      std::optional<int> local_size,
      ReadInt(lookup, names.local_size, kMaxRankValue, names.local_size_leading_integer));
  COHORT_RETURN_IF_ERROR(
      Require(size.has_value(), absl::StrCat(names.rank, " and ", names.size, " must both be set (",
                                             names.launcher, " launcher variables)")));
  WorkerRanks r;
  r.rank = *rank;
  r.size = *size;
  COHORT_RETURN_IF_ERROR(
      Require(r.size >= 1, absl::StrCat(names.size, " must be >= 1, got ", r.size)));
  COHORT_RETURN_IF_ERROR(
      Require(r.rank < r.size,
              absl::StrCat(names.rank, "=", r.rank, " is not below ", names.size, "=", r.size)));
  r.local_size = local_size.value_or(r.size);
  COHORT_RETURN_IF_ERROR(Require(r.local_size >= 1 && r.local_size <= r.size,
                                 absl::StrCat(names.local_size, "=", r.local_size,
                                              " must be in [1, ", names.size, "=", r.size, "]")));
  r.local_rank = local_rank.value_or(r.rank % r.local_size);
  COHORT_RETURN_IF_ERROR(Require(r.local_rank < r.local_size,
                                 absl::StrCat(names.local_rank, "=", r.local_rank, " is not below ",
                                              names.local_size, "=", r.local_size)));
  COHORT_RETURN_IF_ERROR(ReadCrossRanks(names, lookup, r));
  return std::optional<WorkerRanks>(r);
}

std::string FormatGpuList(const std::vector<int>& gpus) { return absl::StrJoin(gpus, ","); }

absl::StatusOr<std::vector<int>> ParseGpuList(absl::string_view what, absl::string_view text) {
  std::vector<int> gpus;
  if (text.empty()) return gpus;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    int id = -1;
    if (!absl::SimpleAtoi(piece, &id) || id < 0 || id > kMaxGpuId ||
        std::find(gpus.begin(), gpus.end(), id) != gpus.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be distinct GPU ids separated by commas (e.g. 0,1), got '",
                       Shown(std::string(text)), "'"));
    }
    gpus.push_back(id);
  }
  return gpus;
}

std::map<std::string, std::optional<std::string>> LaunchEnv::ToEnv() const {
  std::map<std::string, std::optional<std::string>> env;
  if (ranks) {
    env["COHORT_RANK"] = absl::StrCat(ranks->rank);
    env["COHORT_SIZE"] = absl::StrCat(ranks->size);
    env["COHORT_LOCAL_RANK"] = absl::StrCat(ranks->local_rank);
    env["COHORT_LOCAL_SIZE"] = absl::StrCat(ranks->local_size);
    env["COHORT_CROSS_RANK"] = absl::StrCat(ranks->cross_rank);
    env["COHORT_CROSS_SIZE"] = absl::StrCat(ranks->cross_size);
  }
  if (!chief_addr.empty()) env["COHORT_CHIEF_ADDR"] = chief_addr;
  if (rendezvous_port) env["COHORT_RENDEZVOUS_PORT"] = absl::StrCat(*rendezvous_port);
  if (!network_interface.empty()) env["COHORT_NETWORK_INTERFACE"] = network_interface;
  if (launcher) env["COHORT_LAUNCHER"] = "1";
  if (host_store) env["COHORT_HOST_STORE"] = "1";
  if (collective_timeout) {
    env["COHORT_COLLECTIVE_TIMEOUT"] = absl::StrCat(absl::ToDoubleSeconds(*collective_timeout));
  }
  if (rendezvous_timeout) {
    env["COHORT_RENDEZVOUS_TIMEOUT"] = absl::StrCat(absl::ToDoubleSeconds(*rendezvous_timeout));
  }
  if (!cuda_visible_devices.empty()) env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices;
  if (gpu_slot) env["COHORT_GPU_SLOT"] = "1";
  return env;
}

absl::StatusOr<LaunchEnv> LaunchEnv::FromEnv(const EnvLookup& lookup) {
  LaunchEnv env;
  COHORT_ASSIGN_OR_RETURN(env.ranks, ReadRanks(kCohortRankVariables, lookup));
  env.chief_addr = Get(lookup, "COHORT_CHIEF_ADDR");
  COHORT_ASSIGN_OR_RETURN(env.rendezvous_port, ReadInt(lookup, "COHORT_RENDEZVOUS_PORT", 65535));
  env.network_interface = Get(lookup, "COHORT_NETWORK_INTERFACE");
  COHORT_ASSIGN_OR_RETURN(env.launcher, ReadFlag(lookup, "COHORT_LAUNCHER"));
  COHORT_ASSIGN_OR_RETURN(env.host_store, ReadFlag(lookup, "COHORT_HOST_STORE"));
  COHORT_ASSIGN_OR_RETURN(env.collective_timeout, ReadSeconds(lookup, "COHORT_COLLECTIVE_TIMEOUT"));
  COHORT_ASSIGN_OR_RETURN(env.rendezvous_timeout, ReadSeconds(lookup, "COHORT_RENDEZVOUS_TIMEOUT"));
  env.cuda_visible_devices = Get(lookup, "CUDA_VISIBLE_DEVICES");
  COHORT_ASSIGN_OR_RETURN(env.gpu_slot, ReadFlag(lookup, "COHORT_GPU_SLOT"));
  return env;
}

absl::StatusOr<LaunchEnv> LaunchEnv::FromProcessEnv() {
  return FromEnv([](const char* name) { return env::Get(name); });
}

}  // namespace cohort::wire
