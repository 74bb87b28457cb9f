#pragma once
// ConnectionPool: up to `size` connections of one database, lent to one caller at a time, so
// that a server's worth of threads can run statements at once (PostgreSQL; SQLite has one
// writer and keeps its single connection). A connection is made when none is idle and fewer
// than `size` exist, outside the pool's lock; one returned unhealthy (its server went away) is
// closed, and the next caller gets a new one. A caller that finds every connection lent waits
// at most `wait`; while the server is down, Acquire fails at once with the connection error
// (Unavailable naming the database) instead of hanging. An idle connection is checked before
// it is lent (Connection::StillConnected): one whose server restarted is closed and replaced by
// a new one, so the first call after a restart does not fail on it.
// Thread-safe.
//
// Example:
//   ConnectionPool pool([&] { return ConnectPostgres(url, options); }, 16, absl::Seconds(5));
//   COHORT_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool.Acquire());
//   COHORT_RETURN_IF_ERROR(RunTransaction(*conn, [&] { ... }));

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "master/db/sql/driver.h"

namespace cohort::master::sql {

class ConnectionPool {
 public:
  using Connector = std::function<absl::StatusOr<std::unique_ptr<Connection>>()>;

  ConnectionPool(Connector connect, int size, absl::Duration wait);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // One connection, given back to the pool when the lease goes (closed if unhealthy).
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() const { return *connection_; }
    Connection* operator->() const { return connection_.get(); }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    ConnectionPool* pool_;
    std::unique_ptr<Connection> connection_;
  };

  // An idle connection, or a new one; DeadlineExceeded (naming the size) after `wait` with every
  // connection lent; the connector's error when a new one cannot be made.
  absl::StatusOr<Lease> Acquire() ABSL_LOCKS_EXCLUDED(mu_);

  int open() const ABSL_LOCKS_EXCLUDED(mu_);  // connections made and not closed
  int idle() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Give(std::unique_ptr<Connection> connection) ABSL_LOCKS_EXCLUDED(mu_);
  // An idle connection; null with a place reserved (open_ counted) for the caller to make one;
  // DeadlineExceeded when neither came by `deadline`.
  absl::StatusOr<std::unique_ptr<Connection>> TakeIdle(absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  const Connector connect_;
  const int size_;
  const absl::Duration wait_;
  mutable Mutex mu_;
  CondVar returned_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // lent + idle + being made
};

}  // namespace cohort::master::sql
