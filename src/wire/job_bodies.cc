#include "wire/job_bodies.h"

#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxTextBytes = 4096;
constexpr size_t kMaxEntries = 100000;
constexpr int kMaxSlots = 1 << 16;  // as an agent may have (agent_protocol.cc)

absl::StatusOr<ResourcePoolSummary> ParsePool(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  ResourcePoolSummary p;
  r.Required("name", &p.name, kMaxNameBytes);
  r.Optional("description", &p.description, kMaxTextBytes);
  r.Required("scheduler", &p.scheduler, kMaxNameBytes);
  r.Required("preemption", &p.preemption);
  r.Required("agents", &p.agents, {.min = 0});
  r.Required("slots", &p.slots, {.min = 0});
  r.Required("used", &p.used, {.min = 0});
  r.Required("trials_running", &p.trials_running, {.min = 0});
  r.Required("trials_queued", &p.trials_queued, {.min = 0});
  COHORT_RETURN_IF_ERROR(r.status());
  return p;
}

absl::StatusOr<JobEntry> ParseJob(const Json& json, const std::string& context) {
  FieldReader r(json, context);
  JobEntry j;
  r.Required("position", &j.position, {.min = 1});
  r.RequiredId("experiment_id", &j.experiment_id);
  r.Required("name", &j.name, kMaxTextBytes);
  r.Optional("owner", &j.owner, kMaxNameBytes);
  r.Required("pool", &j.pool, kMaxNameBytes);
  r.Required("state", &j.state, kMaxNameBytes);
  r.Required("priority", &j.priority, {.min = 1, .max = 99});
  r.Required("weight", &j.weight, {.min = 0});
  r.Required("max_slots", &j.max_slots, {.min = 0});
  r.Required("slots_per_trial", &j.slots_per_trial, {.min = 1});
  r.Required("slots_held", &j.slots_held, {.min = 0});
  r.Required("trials_running", &j.trials_running, {.min = 0});
  r.Required("trials_queued", &j.trials_queued, {.min = 0});
  r.Optional("waiting", &j.waiting, kMaxTextBytes);
  COHORT_RETURN_IF_ERROR(r.status());
  return j;
}

}  // namespace

Json ResourcePoolList::ToJson() const {
  Json list = Json::array();
  for (const ResourcePoolSummary& p : pools) {
    list.push_back({{"name", p.name},
                    {"description", p.description},
                    {"scheduler", p.scheduler},
                    {"preemption", p.preemption},
                    {"agents", p.agents},
                    {"slots", p.slots},
                    {"used", p.used},
                    {"trials_running", p.trials_running},
                    {"trials_queued", p.trials_queued}});
  }
  return {{"pools", list}};
}

absl::StatusOr<ResourcePoolList> ParseResourcePoolList(const Json& json) {
  FieldReader r(json, "resource pool list");
  ResourcePoolList out;
  r.Array("pools", &out.pools, kMaxEntries, FieldReader::kRequired, ParsePool);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json JobList::ToJson() const {
  Json list = Json::array();
  for (const JobEntry& j : jobs) {
    list.push_back({{"position", j.position},
                    {"experiment_id", j.experiment_id},
                    {"name", j.name},
                    {"owner", j.owner},
                    {"pool", j.pool},
                    {"state", j.state},
                    {"priority", j.priority},
                    {"weight", j.weight},
                    {"max_slots", j.max_slots},
                    {"slots_per_trial", j.slots_per_trial},
                    {"slots_held", j.slots_held},
                    {"trials_running", j.trials_running},
                    {"trials_queued", j.trials_queued},
                    {"waiting", j.waiting}});
  }
  return {{"jobs", list}};
}

absl::StatusOr<JobList> ParseJobList(const Json& json) {
  FieldReader r(json, "job list");
  JobList out;
  r.Array("jobs", &out.jobs, kMaxEntries, FieldReader::kRequired, ParseJob);
  COHORT_RETURN_IF_ERROR(r.status());
  return out;
}

Json JobUpdate::ToJson() const {
  Json j = Json::object();
  if (priority) j["priority"] = *priority;
  if (weight) j["weight"] = *weight;
  if (max_slots) j["max_slots"] = *max_slots;
  if (ahead_of) j["ahead_of"] = *ahead_of;
  if (behind_of) j["behind_of"] = *behind_of;
  return j;
}

absl::StatusOr<JobUpdate> ParseJobUpdate(const Json& json) {
  FieldReader r(json, "job update");
  JobUpdate u;
  int priority = 0, max_slots = 0;
  int64_t ahead = 0, behind = 0;
  if (r.Has("priority")) {
    r.Required("priority", &priority, {.min = 1, .max = 99});
    u.priority = priority;
  }
  r.Optional("weight", &u.weight, {.min = 1e-9});
  if (r.Has("max_slots")) {
    r.Required("max_slots", &max_slots, {.min = 0, .max = kMaxSlots});
    u.max_slots = max_slots;
  }
  if (r.Has("ahead_of")) {
    r.RequiredId("ahead_of", &ahead);
    u.ahead_of = ahead;
  }
  if (r.Has("behind_of")) {
    r.RequiredId("behind_of", &behind);
    u.behind_of = behind;
  }
  if (r.ok() && u.ahead_of && u.behind_of) r.Fail("ahead_of", "give ahead_of or behind_of, not both");
  COHORT_RETURN_IF_ERROR(r.status());
  return u;
}

}  // namespace cohort::wire
