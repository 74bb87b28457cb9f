#pragma once
// What a node of an allocation could not deliver to the master before its run ended (the master
// unreachable while the agent stopped, or for the whole of the 10 minutes' patience): its exit
// status and the tail of its log. Kept in <work_dir>/undelivered/ (one file per node, written
// atomically: a temporary file renamed over it, mode 0600, since it holds the allocation's token)
// and delivered by the agent's next run before it registers, then deleted
// (docs/design/0011-master-restart-readoption.md).
// Thread-compatible value type; the functions touch only their own files.
//
// Example:
//   COHORT_RETURN_IF_ERROR(SaveUndelivered(work_dir, kept));
//   for (auto& [path, kept] : ListUndelivered(work_dir)) ... DeliverUndelivered(url, ..., *kept)

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wire/agent_protocol.h"

namespace cohort::agent {

// A node's exit and the tail of its log, as the master would have had them.
struct UndeliveredExit {
  std::string allocation;  // "<trial>.<boot>.<n>"
  std::string token;       // the allocation's credential: the posts are made as the allocation
  int64_t trial_id = 0;
  int node = 0;
  int status = 0;  // cohort-launch's exit status
  std::vector<wire::LogLine> lines;

  nlohmann::json ToJson() const;
};
absl::StatusOr<UndeliveredExit> ParseUndeliveredExit(const nlohmann::json& json,
                                                     const std::string& context);

// At most this much of a node's log is kept: the last lines, with a first line saying how many
// earlier ones were left out.
inline constexpr size_t kMaxKeptLines = 2000;
inline constexpr size_t kMaxKeptBytes = 1u << 20;

// Keeps `exit`, its lines cut to the bounds above, as <work_dir>/undelivered/<allocation>-node<N>
// .json. Errors name the file and the system's reason.
absl::Status SaveUndelivered(const std::string& work_dir, const std::string& agent_id,
                             UndeliveredExit exit);

// Every kept record with its file, oldest name first; a file that does not parse comes with the
// error (it is of no use: the caller deletes it).
std::vector<std::pair<std::string, absl::StatusOr<UndeliveredExit>>> ListUndelivered(
    const std::string& work_dir);

// Posts the record's lines, then its exit, to the master as the allocation (its token; `tls_ca`
// as AgentOptions::tls_ca_file). OK when the master took them; Unavailable when it did not answer
// (keep the file and try again later); any other error is the master's final answer (it no longer
// knows the allocation, say): the record cannot be delivered.
absl::Status DeliverUndelivered(const std::string& master_url, const std::string& tls_ca,
                                const UndeliveredExit& exit);

}  // namespace cohort::agent
