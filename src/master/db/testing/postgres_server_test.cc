// The throwaway PostgreSQL server the database tests stand on: it starts, makes databases a
// client (libpq) can use, loses nothing it acknowledged when killed and restarted, and leaves
// nothing behind.
#include "master/db/testing/postgres_server.h"

#include <libpq-fe.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::master::db_testing {
namespace {

struct PgConnDeleter {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct PgResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Conn = std::unique_ptr<PGconn, PgConnDeleter>;
using Result = std::unique_ptr<PGresult, PgResultDeleter>;

Conn Connect(const std::string& url) {
  Conn conn(PQconnectdb((url + "?connect_timeout=10").c_str()));
  EXPECT_EQ(PQstatus(conn.get()), CONNECTION_OK) << PQerrorMessage(conn.get());
  return conn;
}

TEST(PostgresServerTest, ServesADatabaseAndKeepsWhatItAcknowledgedOverAKill) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresServer> server, PostgresServer::Start());
  const std::string dir = server->socket_dir();
  ASSERT_OK_AND_ASSIGN(std::string url, server->CreateDatabase("cohort"));
  EXPECT_EQ(url, "postgresql://postgres@127.0.0.1:" + std::to_string(server->port()) + "/cohort");
  {
    Conn conn = Connect(url);
    Result made(PQexec(conn.get(), "CREATE TABLE t (x integer); INSERT INTO t VALUES (42)"));
    ASSERT_EQ(PQresultStatus(made.get()), PGRES_COMMAND_OK) << PQerrorMessage(conn.get());

    server->Kill();
    Result lost(PQexec(conn.get(), "SELECT 1"));
    EXPECT_NE(PQresultStatus(lost.get()), PGRES_TUPLES_OK);  // the server is gone
  }
  ASSERT_OK(server->Restart());
  Conn conn = Connect(url);
  Result read(PQexec(conn.get(), "SELECT x FROM t"));
  ASSERT_EQ(PQresultStatus(read.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn.get());
  ASSERT_EQ(PQntuples(read.get()), 1);
  EXPECT_STREQ(PQgetvalue(read.get(), 0, 0), "42");

  conn.reset();
  server.reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace cohort::master::db_testing
