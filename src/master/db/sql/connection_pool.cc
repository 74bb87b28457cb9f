#include "master/db/sql/connection_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"

namespace cohort::master::sql {

ConnectionPool::ConnectionPool(Connector connect, int size, absl::Duration wait)
    : connect_(std::move(connect)), size_(std::max(size, 1)), wait_(wait) {}

ConnectionPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), connection_(std::move(other.connection_)) {}

ConnectionPool::Lease::~Lease() {
  if (pool_ != nullptr && connection_ != nullptr) pool_->Give(std::move(connection_));
}

absl::StatusOr<ConnectionPool::Lease> ConnectionPool::Acquire() {
  const absl::Time deadline = absl::Now() + wait_;
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Connection> idle, TakeIdle(deadline));
  if (idle != nullptr) {
    if (idle->StillConnected()) return Lease(this, std::move(idle));
    // Its server hung up (restarted): closed here, outside the lock; its place in open_ goes
    // to the new connection made below.
    idle.reset();
  }
  absl::StatusOr<std::unique_ptr<Connection>> made = connect_();
  if (!made.ok()) {
    MutexLock lock(&mu_);
    --open_;
    returned_.Signal();  // the reservation is free for a waiter to try
    return made.status();
  }
  return Lease(this, *std::move(made));
}

absl::StatusOr<std::unique_ptr<Connection>> ConnectionPool::TakeIdle(absl::Time deadline) {
  MutexLock lock(&mu_);
  while (idle_.empty() && open_ >= size_) {
    if (returned_.WaitWithDeadline(&mu_, deadline) && idle_.empty() && open_ >= size_) {
      return absl::DeadlineExceededError(absl::StrCat(
          "every one of the database's ", size_, " connections stayed busy for ",
          absl::FormatDuration(wait_),
          ": a larger pool, or the statements holding them (the database's slow-query log)"));
    }
  }
  if (!idle_.empty()) {
    std::unique_ptr<Connection> connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }
  ++open_;  // reserved: made by the caller, outside the lock
  return std::unique_ptr<Connection>();
}

void ConnectionPool::Give(std::unique_ptr<Connection> connection) {
  const bool keep = connection->healthy();
  if (!keep) connection.reset();  // closed outside the lock
  MutexLock lock(&mu_);
  if (keep) {
    idle_.push_back(std::move(connection));
  } else {
    --open_;
  }
  returned_.Signal();
}

int ConnectionPool::open() const {
  MutexLock lock(&mu_);
  return open_;
}

int ConnectionPool::idle() const {
  MutexLock lock(&mu_);
  return static_cast<int>(idle_.size());
}

}  // namespace cohort::master::sql
