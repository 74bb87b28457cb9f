#pragma once
// WalCheckpointer: keeps a WAL database's checkpoints off its writer's path.
//
// SQLite checkpoints in the committing call once the WAL passes 1000 pages (~4 MB): it copies
// the WAL's pages into the database file and syncs both. Under SqliteDatabase's one connection that
// stalled every other call of the master for the copy and the syncs (at 200 agents: ~11
// checkpoints a second, median 7 ms, up to 84 ms; the main cause of the combined posts' p99).
// The checkpointer turns that off on the writer's connection and runs PASSIVE checkpoints on a
// connection and a thread of its own; in WAL mode a checkpoint never blocks the writer nor the
// writer the checkpoint, and the writer starts the WAL over once a checkpoint has copied all
// of it. Under a steady stream of commits some land during each background checkpoint, so the
// WAL seldom starts over by itself; past `writer_pages` the writer checkpoints itself (cheap:
// all but the newest pages are copied by then), which bounds the WAL whatever happens, a
// stalled disk included.
//
// Contract: Start after the database is in WAL mode; the writer connection outlives the
// checkpointer; destroying it stops the thread (within its wait's deadline: 1 s) and closes
// its connection before the writer's, whose close then does the last checkpoint.
//
// Example (SqliteDatabase::Open):
//   COHORT_ASSIGN_OR_RETURN(checkpointer_, WalCheckpointer::Start(db_, path_));

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "master/db/sqlite_database.h"

struct sqlite3;

namespace cohort::master::internal {

struct WalCheckpointerOptions {
  int wake_pages = 1000;     // new WAL pages that wake the checkpointer (SQLite's 1000: ~4 MB)
  int writer_pages = 16000;  // past this (~64 MB) the writer checkpoints itself, as SQLite did
};

class WalCheckpointer {
 public:
  // Opens the checkpointer's own connection to `path` and starts its thread; replaces the
  // writer's automatic checkpoint (its WAL hook). Unavailable when the connection cannot open.
  static absl::StatusOr<std::unique_ptr<WalCheckpointer>> Start(
      sqlite3* writer, const std::string& path, const WalCheckpointerOptions& options = {});
  ~WalCheckpointer();

  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Checkpoints run on the checkpointer's thread (background), and by the writer because the
  // WAL passed writer_pages (by_writer): what SqliteDatabase::wal_checkpoints reports.
  using Counts = WalCheckpoints;
  Counts counts() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  WalCheckpointer(sqlite3* writer, sqlite3* own, std::string path, WalCheckpointerOptions o);
  // The writer's WAL hook: after each commit, with the WAL's size in pages. Runs on the
  // committing thread, which holds SqliteDatabase's one connection (not mu_).
  static int OnCommit(void* self, sqlite3* db, const char* schema, int pages);
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // One PASSIVE checkpoint on `db`; a failure is logged when it differs from the last one.
  // Takes mu_ after the checkpoint, to count it.
  void Checkpoint(sqlite3* db, const char* who) ABSL_LOCKS_EXCLUDED(mu_);

  sqlite3* const writer_;
  sqlite3* const own_;  // owned: the checkpointer's connection, used on its thread only
  const std::string path_;
  const WalCheckpointerOptions options_;
  // mu_ guards what the hook, the thread and counts() share: the request (wanted_), the stop,
  // the counts and the last error. cv_ wakes the thread (wanted_ or stopping_ set).
  mutable Mutex mu_;
  CondVar cv_;
  // The WAL's pages when the hook last woke the thread. Hook only, so not under mu_: SQLite
  // calls the hook inside the writer's commits, which run one at a time (under
  // SqliteDatabase's connection lease, which the analysis cannot see).
  int woken_at_ = 0;
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;  // the hook asked for a checkpoint not yet begun
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  // SQLite's result code of the last failed checkpoint (0: none).
  int last_error_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // set by Start, joined by the destructor
};

}  // namespace cohort::master::internal
