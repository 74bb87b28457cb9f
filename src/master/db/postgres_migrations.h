#pragma once
// The master's schema in PostgreSQL's dialect: the same versions, tables and columns as
// sqlite_migrations.h (a test compares the two schemas), with PostgreSQL's types: identity
// columns for SQLite's INTEGER PRIMARY KEY, BIGINT for every integer (ids, milliseconds),
// DOUBLE PRECISION for REAL, and an identity `seq` where SQLite's code orders rows by rowid.
// Thread-safe (constants).

#include <vector>

#include "absl/strings/string_view.h"

namespace cohort::master::internal {

// The SQL of version i + 1 at index i.
const std::vector<absl::string_view>& PostgresMigrations();

}  // namespace cohort::master::internal
