#pragma once
// RunChunkPipeline: three phases over a buffer's chunks, the middle one (the network's) on a
// thread of its own so that it overlaps the other two. Chunk i's `middle` runs while the calling
// thread runs `before(i + 1)` and then `after(i - 1)`; each phase sees the chunks in order, and
// `middle(i)` starts only once `before(i)` is done and `after(i)` only once `middle(i)` is.
// One chunk runs on the calling thread alone. The middle phases run on a worker thread that each
// calling thread starts once and keeps until it exits (a training step's pipelines start no
// thread). The first error stops it and
// is returned: after a failed middle(i), neither after(i) nor any later middle or after runs
// (before(i + 1) may have); a middle already running is waited for.
//
// Used by the hierarchical allreduce (shared-memory reduce-scatter / cross-machine allreduce /
// shared-memory allgather) and by AllreduceAsHalf (to fp16 / allreduce / back to fp32).
//
// Example:
//   COHORT_RETURN_IF_ERROR(internal::RunChunkPipeline(
//       chunks, [&](size_t i) { return Narrow(i); }, [&](size_t i) { return Send(i); },
//       [&](size_t i) { return Widen(i); }));

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace cohort::comm::internal {

using ChunkPhase = absl::FunctionRef<absl::Status(size_t chunk)>;

absl::Status RunChunkPipeline(size_t chunks, ChunkPhase before, ChunkPhase middle,
                              ChunkPhase after);

}  // namespace cohort::comm::internal
