#include "master/db/internal/wal_checkpointer.h"

#include <sqlite3.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/db/internal/sqlite_statement.h"

namespace cohort::master::internal {
namespace {

// Bounds the thread's wait when nothing wakes it, so a lost wake-up costs at most this long.
constexpr absl::Duration kIdleWait = absl::Seconds(1);

absl::StatusOr<std::string> JournalMode(sqlite3* db, const std::string& path) {
  Statement s(db, path, "read the journal mode", "PRAGMA journal_mode");
  COHORT_ASSIGN_OR_RETURN(bool row, s.Step());
  return row ? s.Text(0) : std::string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(
    sqlite3* writer, const std::string& path, const WalCheckpointerOptions& options) {
  sqlite3* own = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &own, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteError(own, path, "open a connection for checkpoints", rc);
    sqlite3_close(own);
    return status;
  }
  // A connection learns that the file is in WAL mode when it first reads it; until then its
  // checkpoints do nothing.
  absl::StatusOr<std::string> mode = JournalMode(own, path);
  if (!mode.ok() || *mode != "wal") {
    sqlite3_close(own);
    return mode.ok() ? absl::FailedPreconditionError(absl::StrCat(
                           path, ": journal mode '", *mode, "', not 'wal': nothing to checkpoint"))
                     : mode.status();
  }
  std::unique_ptr<WalCheckpointer> checkpointer(new WalCheckpointer(writer, own, path, options));
  sqlite3_wal_hook(writer, &WalCheckpointer::OnCommit, checkpointer.get());
  checkpointer->thread_ = std::thread([c = checkpointer.get()] { c->Run(); });
  return checkpointer;
}

WalCheckpointer::WalCheckpointer(sqlite3* writer, sqlite3* own, std::string path,
                                 WalCheckpointerOptions o)
    : writer_(writer), own_(own), path_(std::move(path)), options_(o) {}

WalCheckpointer::~WalCheckpointer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  // The writer's commits checkpoint as SQLite's own default does again (1000 pages).
  sqlite3_wal_autocheckpoint(writer_, options_.wake_pages);
  sqlite3_close_v2(own_);
}

WalCheckpointer::Counts WalCheckpointer::counts() const {
  MutexLock lock(&mu_);
  return counts_;
}

int WalCheckpointer::OnCommit(void* self, sqlite3* db, const char* /*schema*/, int pages) {
  auto* c = static_cast<WalCheckpointer*>(self);
  if (pages >= c->options_.writer_pages) {
    // The WAL starts over only when a commit begins with all of it copied, which under a
    // steady stream of commits the background checkpoints seldom leave: this one does, and
    // costs little (the checkpointer has copied all but the last frames).
    c->Checkpoint(db, "the writer");
    return SQLITE_OK;
  }
  if (pages < c->woken_at_) c->woken_at_ = 0;  // the WAL has started over
  if (pages - c->woken_at_ < c->options_.wake_pages) return SQLITE_OK;
  c->woken_at_ = pages;
  {
    MutexLock lock(&c->mu_);
    c->wanted_ = true;
  }
  c->cv_.Signal();
  return SQLITE_OK;  // a WAL hook's error would fail the commit that already happened
}

void WalCheckpointer::Run() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time deadline = absl::Now() + kIdleWait;
    bool timed_out = false;
    while (!wanted_ && !stopping_ && !timed_out) timed_out = cv_.WaitWithDeadline(&mu_, deadline);
    if (stopping_ || !wanted_) continue;
    wanted_ = false;  // commits from here on may ask again
    mu_.Unlock();
    Checkpoint(own_, "the checkpointer");
    mu_.Lock();
  }
}

void WalCheckpointer::Checkpoint(sqlite3* db, const char* who) {
  // PASSIVE: copies what no reader still needs, waits for nobody, never blocks the writer.
  const int rc =
      sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  MutexLock lock(&mu_);
  ++(db == own_ ? counts_.background : counts_.by_writer);
  if (rc == SQLITE_OK || rc == SQLITE_BUSY) {  // BUSY: another checkpoint was running
    if (last_error_ != 0) {
      COHORT_LOG(INFO) << path_ << ": WAL checkpoints succeed again";
    }
    last_error_ = 0;
    return;
  }
  if (rc != last_error_) {
    COHORT_LOG(WARNING) << SqliteError(db, path_, absl::StrCat("checkpoint by ", who), rc)
                        << " (the WAL file grows until a checkpoint succeeds; check the disk)";
  }
  last_error_ = rc;
}

}  // namespace cohort::master::internal
