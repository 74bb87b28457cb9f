#pragma once
// PostgresServer: a real, throwaway PostgreSQL server for tests (Debian's postgresql 15, which
// scripts/install.sh --test installs). Start() runs initdb in a temporary directory (trust
// authentication, no fsync) and then `postgres` itself in the foreground, on a free loopback port
// and a unix socket in that directory, with fsync off: about 2-3 s. The server dies with the
// test process (a parent-death signal) or with this object; nothing is left behind but what the
// temporary directory held, which goes too. When the test runs as root the server runs as the
// `postgres` user (PostgreSQL refuses root). Test-only.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(auto server, PostgresServer::Start());
//   ASSERT_OK_AND_ASSIGN(std::string url, server->CreateDatabase("cohort"));
//   // url: "postgresql://postgres@127.0.0.1:PORT/cohort"

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/subprocess.h"
#include "common/testing/temp_dir.h"

namespace cohort::master::db_testing {

class PostgresServer {
 public:
  // Started and accepting connections, or an error saying what is missing (FailedPrecondition
  // naming scripts/install.sh --test when PostgreSQL's programs are not installed).
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();

  int port() const { return port_; }
  // The directory of the server's unix socket (a libpq "host").
  const std::string& socket_dir() const { return dir_.path(); }
  // Creates an empty database and returns its URL (user postgres, no password, loopback TCP).
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // Kills the server at once (SIGKILL: as a crash or a lost machine would); Restart starts it
  // again on the same port and data (crash recovery replays its WAL).
  void Kill();
  absl::Status Restart();

 private:
  PostgresServer() = default;
  absl::Status InitDb();
  absl::Status Launch();
  // argv run as the server's user: `setpriv` to postgres when this process is root.
  std::vector<std::string> AsServerUser(std::vector<std::string> argv) const;
  // Runs a PostgreSQL program to completion (at most `timeout`); its output in the error.
  absl::Status RunTool(std::vector<std::string> argv, absl::Duration timeout);

  testing_support::TempDir dir_{"postgres"};
  std::string bin_dir_;
  int port_ = 0;
  std::unique_ptr<Subprocess> server_;
};

// A new, empty database on one server shared by the whole test binary (started on first use,
// about 3 s; it dies with the process): its URL. The server's start error when it cannot start.
absl::StatusOr<std::string> NewSharedDatabase();

// The directory of PostgreSQL's programs: $COHORT_POSTGRES_BIN, else the newest
// /usr/lib/postgresql/N/bin holding `postgres`; "" when there is none.
std::string PostgresBinDir();

}  // namespace cohort::master::db_testing
