#pragma once
// The REST bodies of the shared cluster's queue (docs/scheduling.md), written by the master and
// read by the CLI and the web page:
//
//   GET  /api/v1/resource-pools           ResourcePoolList
//   GET  /api/v1/jobs[?pool=NAME]         JobList   (the experiments with queued or running
//                                                    trials, in the order the scheduler serves
//                                                    them, pool by pool)
//   POST /api/v1/jobs/{experiment}        JobUpdate -> OkBody (its owner or an admin)
//
// Field names and shapes are the API's; parsers name the body and the field in errors and
// ignore unknown fields. Thread-compatible value types; the functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace cohort::wire {

using Json = nlohmann::json;

struct ResourcePoolSummary {
  std::string name;
  std::string description;
  std::string scheduler = "priority";  // or "fair_share"
  bool preemption = false;
  int agents = 0;  // connected
  int slots = 0;   // on its enabled, connected agents
  int used = 0;
  int64_t trials_running = 0;
  int64_t trials_queued = 0;
};
struct ResourcePoolList {
  std::vector<ResourcePoolSummary> pools;
  Json ToJson() const;
};
absl::StatusOr<ResourcePoolList> ParseResourcePoolList(const Json& json);

// One experiment in the queue.
struct JobEntry {
  int position = 0;  // 1-based, in its pool's order
  int64_t experiment_id = 0;
  std::string name;
  std::string owner;
  std::string pool;
  std::string state;  // the experiment's (ACTIVE, PAUSED)
  int priority = 42;
  double weight = 1.0;
  int max_slots = 0;  // 0: no cap
  int slots_per_trial = 1;
  int slots_held = 0;  // by its running trials
  int64_t trials_running = 0;
  int64_t trials_queued = 0;
  std::string waiting;  // why its first queued trial waits; empty when none waits
};
struct JobList {
  std::vector<JobEntry> jobs;
  Json ToJson() const;
};
absl::StatusOr<JobList> ParseJobList(const Json& json);

// What `cohort job update` changes; absent fields stay. ahead_of/behind_of: an experiment of
// the same pool, whose priority the job takes, placed just before or after it.
struct JobUpdate {
  std::optional<int> priority;    // 1..99
  std::optional<double> weight;   // > 0
  std::optional<int> max_slots;   // >= 0 (0 removes the cap)
  std::optional<int64_t> ahead_of;
  std::optional<int64_t> behind_of;
  Json ToJson() const;
};
absl::StatusOr<JobUpdate> ParseJobUpdate(const Json& json);

}  // namespace cohort::wire
