#pragma once
// The PostgreSQL driver (driver.h) on libpq: a connection opened from a postgresql:// URL with
// deadlines everywhere (connect timeout, TCP keepalives, a statement timeout), statements
// prepared once per connection and text with ?N rewritten to PostgreSQL's $N, and the server's
// SQLSTATE sorted into driver.h's Failure kinds. A connection whose server went away reports
// kConnectionLost (Unavailable naming the database) and stays unhealthy; callers open a new
// one. Messages name the database by its masked URL: a password never reaches an error or a
// log. Thread-compatible (driver.h).
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Connection> conn,
//                           sql::ConnectPostgres("postgresql://cohort@db:5432/cohort", password));
//   auto s = conn->Prepare("insert agent", "INSERT INTO agents (id) VALUES (?1)");
//   s->BindText(1, "agent-1");
//   COHORT_RETURN_IF_ERROR(s->Run());

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "master/db/sql/driver.h"

namespace cohort::master::sql {

struct PostgresOptions {
  // The password, when the URL has none and libpq's own sources (PGPASSWORD, ~/.pgpass) are not
  // to be used; empty: libpq's sources.
  std::string password;
  absl::Duration connect_timeout = absl::Seconds(10);
  // The server cancels any statement running longer (a lock held by a stuck client, a query
  // gone wrong) instead of the master waiting without end.
  absl::Duration statement_timeout = absl::Seconds(30);
};

// A connection to the database `url` names (postgresql:// or postgres://, libpq's syntax).
// Unavailable naming the masked URL and the server's reason when it cannot be reached or
// refuses the login.
absl::StatusOr<std::unique_ptr<Connection>> ConnectPostgres(const std::string& url,
                                                            const PostgresOptions& options = {});

// `sql` with each ?N outside string literals, quoted identifiers and comments rewritten to $N;
// *parameters is the largest N. Exposed for tests.
std::string PostgresPlaceholders(absl::string_view sql, int* parameters);

// The Failure kind of a SQLSTATE ("23505": kUniqueViolation). Exposed for tests.
Failure FailureOfSqlState(absl::string_view sqlstate);

}  // namespace cohort::master::sql
