#include "comm/internal/chunk_pipeline.h"

#include <future>

namespace cohort::comm::internal {

absl::Status RunChunkPipeline(size_t chunks, ChunkPhase before, ChunkPhase middle,
                              ChunkPhase after) {
  if (chunks == 0) return absl::OkStatus();
  if (chunks == 1) {  // nothing to overlap: no thread
    absl::Status status = before(0);
    if (status.ok()) status = middle(0);
    if (status.ok()) status = after(0);
    return status;
  }
  std::future<absl::Status> running;  // middle(i - 1)
  absl::Status status;
  for (size_t i = 0; i <= chunks && status.ok(); ++i) {
    if (i < chunks) status = before(i);
    if (running.valid()) {
      const absl::Status done = running.get();
      if (status.ok()) status = done;
    }
    if (status.ok() && i < chunks) {
      running = std::async(std::launch::async, [&middle, i] { return middle(i); });
    }
    if (status.ok() && i > 0) status = after(i - 1);
  }
  if (running.valid()) {
    const absl::Status done = running.get();
    if (status.ok()) status = done;
  }
  return status;
}

}  // namespace cohort::comm::internal
