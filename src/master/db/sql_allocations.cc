// SqlDatabase's running allocations (database.h), kept for a restarted master to re-adopt.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"
#include "nlohmann/json.hpp"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;
using Json = nlohmann::json;

std::string NodesJson(const std::vector<std::pair<std::string, int>>& nodes) {
  Json out = Json::array();
  for (const auto& [agent, slots] : nodes) out.push_back({agent, slots});
  return out.dump();
}

// [[agent, slots], ...]; DataLoss naming the allocation when the text is not that.
absl::StatusOr<std::vector<std::pair<std::string, int>>> ParseNodes(const std::string& id,
                                                                    const std::string& text) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::pair<std::string, int>> nodes;
  bool ok = json.is_array() && !json.empty();
  for (size_t i = 0; ok && i < json.size(); ++i) {
    const Json& node = json[i];
    ok = node.is_array() && node.size() == 2 && node[0].is_string() &&
         node[1].is_number_integer() && node[1].get<int64_t>() >= 1;
    if (ok) nodes.emplace_back(node[0].get<std::string>(), node[1].get<int>());
  }
  if (!ok) {
    return absl::DataLossError(
        absl::StrCat("allocations row '", id,
                     "': nodes_json is not [[agent, slots], ...]: ", text.substr(0, 200)));
  }
  return nodes;
}

}  // namespace

absl::Status SqlDatabase::InsertAllocation(const AllocationRow& row) {
  return InsertAllocations({row});
}

absl::Status SqlDatabase::InsertAllocations(const std::vector<AllocationRow>& rows) {
  // One statement for a pass's starts (a hold of the master's lock starts up to 16): atomic on
  // its own, so no transaction around it and one round trip in all.
  const auto insert = [&](sql::Connection& c, size_t first, size_t n) -> absl::Status {
    Query s(c, "insert allocations",
            absl::StrCat("INSERT INTO allocations (id, trial_id, token_hash, nodes_json, "
                         "created_ms) VALUES ",
                         sql::ValuesRows(n, 5)));
    std::vector<std::string> ids;
    for (size_t r = 0; r < n; ++r) {
      const AllocationRow& row = rows[first + r];
      const int base = static_cast<int>(5 * r);
      s.BindText(base + 1, row.id);
      s.BindInt64(base + 2, row.trial_id);
      s.BindText(base + 3, row.token_hash);
      s.BindText(base + 4, NodesJson(row.nodes));
      s.BindInt64(base + 5, row.created_ms);
      ids.push_back(absl::StrCat("'", row.id, "'"));
    }
    absl::Status status = s.Run();
    if (s.failure() == sql::Failure::kUniqueViolation) {
      return absl::AlreadyExistsError(
          n == 1
              ? absl::StrCat("allocation ", ids[0], " already exists")
              : absl::StrCat("one of allocations ", absl::StrJoin(ids, ", "), " already exists"));
    }
    return status;
  };
  using sql::kRowsPerInsert;
  if (rows.empty()) return absl::OkStatus();
  if (rows.size() <= kRowsPerInsert) {
    COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
    return insert(*c, 0, rows.size());
  }
  return Transact([&](sql::Connection& c) -> absl::Status {
    for (size_t first = 0; first < rows.size(); first += kRowsPerInsert) {
      COHORT_RETURN_IF_ERROR(insert(c, first, std::min(kRowsPerInsert, rows.size() - first)));
    }
    return absl::OkStatus();
  });
}

absl::Status SqlDatabase::DeleteAllocation(const std::string& id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete allocation", "DELETE FROM allocations WHERE id = ?1");
  s.BindText(1, id);
  return s.Run();
}

absl::StatusOr<std::vector<AllocationRow>> SqlDatabase::ListAllocations() {
  std::vector<std::pair<AllocationRow, std::string>> raw;
  {
    COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
    Query s(*c, "list allocations",
            "SELECT id, trial_id, token_hash, nodes_json, created_ms FROM allocations "
            "ORDER BY id");
    COHORT_ASSIGN_OR_RETURN(raw,
                            (ReadAll<std::pair<AllocationRow, std::string>>(s, [](const Query& r) {
                              AllocationRow row;
                              row.id = r.Text(0);
                              row.trial_id = r.Int64(1);
                              row.token_hash = r.Text(2);
                              row.created_ms = r.Int64(4);
                              return std::make_pair(std::move(row), r.Text(3));
                            })));
  }
  std::vector<AllocationRow> rows;
  for (auto& [row, nodes_json] : raw) {
    COHORT_ASSIGN_OR_RETURN(row.nodes, ParseNodes(row.id, nodes_json));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace cohort::master
