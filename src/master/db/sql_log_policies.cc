// SqlDatabase's log policy matches (database.h): the first line of each run that matched each
// policy, kept with the trial.

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {

using sql::Query;
using sql::ReadAll;

absl::Status SqlDatabase::InsertLogPolicyMatch(int64_t trial_id, const wire::LogPolicyMatch& m) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert log policy match",
          "INSERT INTO log_policy_matches (trial_id, allocation, policy, action, agent, rank, "
          "line, time_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING");
  s.BindInt64(1, trial_id);
  s.BindText(2, m.allocation);
  s.BindText(3, m.policy);
  s.BindText(4, wire::Name(m.action));
  s.BindText(5, m.agent);
  s.BindInt64(6, m.rank);
  s.BindText(7, m.line);
  s.BindInt64(8, m.time_ms);
  absl::Status status = s.Run();
  if (s.failure() == sql::Failure::kForeignKeyViolation) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, " not found"));
  }
  return status;
}

absl::StatusOr<std::vector<std::pair<int64_t, wire::LogPolicyMatch>>>
SqlDatabase::ListLogPolicyMatches() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list log policy matches",
          absl::StrCat("SELECT trial_id, allocation, policy, action, agent, rank, line, time_ms "
                       "FROM log_policy_matches ORDER BY trial_id, ",
                       dialect().insertion_order));
  using Row = std::pair<int64_t, wire::LogPolicyMatch>;
  return ReadAll<Row>(s, [this](const Query& r) -> absl::StatusOr<Row> {
    absl::StatusOr<wire::LogPolicyAction> action = wire::ParseLogPolicyAction(r.Text(3));
    if (!action.ok()) {
      return absl::DataLossError(absl::StrCat(name(), ": log_policy_matches of trial ", r.Int64(0),
                                              ": ", action.status().message()));
    }
    return Row{r.Int64(0), wire::LogPolicyMatch{.policy = r.Text(2),
                                                .action = *action,
                                                .allocation = r.Text(1),
                                                .agent = r.Text(4),
                                                .rank = static_cast<int>(r.Int64(5)),
                                                .line = r.Text(6),
                                                .time_ms = r.Int64(7)}};
  });
}

}  // namespace cohort::master
