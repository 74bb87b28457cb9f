#pragma once
// The SQLite schema of the master's database, as forward-only migrations. Script i (0-based)
// takes a database from schema version i to i + 1; `schema_version` records the versions applied
// (SqliteDatabase applies the missing ones, each in its own transaction). Thread-safe (constant
// data).
//
// To change the schema, append a script; never edit one that has shipped, since databases in
// the field already ran it.

#include <vector>

#include "absl/strings/string_view.h"

namespace cohort::master::internal {

// The migration scripts, oldest first. Each may hold several statements; none binds values.
const std::vector<absl::string_view>& SqliteMigrations();

// The schema version this build writes: the number of migrations.
int LatestSqliteSchemaVersion();

}  // namespace cohort::master::internal
