#include "comm/internal/chunk_pipeline.h"

#include <optional>
#include <thread>

#include "common/mutex.h"

namespace cohort::comm::internal {
namespace {

// The thread that runs the middle phases: one per calling thread, started on its first
// pipeline of more than one chunk and kept until that thread exits, so that a training step's
// pipelines (one per gradient bucket) start no thread at all. Runs one task at a time.
class ChunkWorker {
 public:
  ChunkWorker() : thread_([this] { Loop(); }) {}
  ~ChunkWorker() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    changed_.SignalAll();
    thread_.join();
  }

  // Starts `middle(chunk)`; the previous task must have been waited for.
  void Start(ChunkPhase middle, size_t chunk) {
    {
      MutexLock lock(&mu_);
      task_.emplace(middle);
      chunk_ = chunk;
      result_.reset();
    }
    changed_.SignalAll();
  }

  // The started task's result, once it is done.
  absl::Status Wait() {
    MutexLock lock(&mu_);
    while (!result_.has_value()) changed_.Wait(&mu_);
    absl::Status status = *result_;
    result_.reset();
    return status;
  }

 private:
  void Loop() {
    MutexLock lock(&mu_);
    while (true) {
      while (!stop_ && !task_.has_value()) changed_.Wait(&mu_);
      if (stop_) return;
      ChunkPhase middle = *task_;
      const size_t chunk = chunk_;
      mu_.Unlock();
      absl::Status status = middle(chunk);
      mu_.Lock();
      task_.reset();
      result_ = std::move(status);
      changed_.SignalAll();
    }
  }

  Mutex mu_;
  CondVar changed_;
  std::optional<ChunkPhase> task_ ABSL_GUARDED_BY(mu_);
  size_t chunk_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Status> result_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

absl::Status RunChunkPipeline(size_t chunks, ChunkPhase before, ChunkPhase middle,
                              ChunkPhase after) {
  if (chunks == 0) return absl::OkStatus();
  if (chunks == 1) {  // nothing to overlap: no thread
    absl::Status status = before(0);
    if (status.ok()) status = middle(0);
    if (status.ok()) status = after(0);
    return status;
  }
  // A pipeline nested inside another's before or after phase (none does so today) gets a
  // worker of its own rather than the busy one.
  static thread_local ChunkWorker shared;
  static thread_local int depth = 0;
  std::optional<ChunkWorker> own;
  ChunkWorker& worker = depth == 0 ? shared : own.emplace();
  struct Depth {
    Depth() { ++depth; }
    ~Depth() { --depth; }
  } nesting;
  bool running = false;  // middle(i - 1)
  absl::Status status;
  for (size_t i = 0; i <= chunks && status.ok(); ++i) {
    if (i < chunks) status = before(i);
    if (running) {
      const absl::Status done = worker.Wait();
      running = false;
      if (status.ok()) status = done;
    }
    if (status.ok() && i < chunks) {
      worker.Start(middle, i);
      running = true;
    }
    if (status.ok() && i > 0) status = after(i - 1);
  }
  if (running) {
    const absl::Status done = worker.Wait();
    if (status.ok()) status = done;
  }
  return status;
}

}  // namespace cohort::comm::internal
