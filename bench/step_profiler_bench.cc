// step_profiler_bench: what the profiler adds to each profiled batch on the training thread (a
// rank's bookkeeping: the phase spans, the bucket spans, one JSON line appended and flushed to
// RUN_DIR/profile/rank-<R>.jsonl), and what it costs outside the window (a flag test). Compare
// with a batch's time (46 ms for the Fashion-MNIST CNN at 64 samples per rank on this VM).
// The end-to-end measurement (training throughput, profiling on vs off) is
// bench/profiling_overhead.sh. Google Benchmark.
//
//   build/bench/step_profiler_bench

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "runtime/step_profiler.h"

namespace cohort::runtime {
namespace {

namespace fs = std::filesystem;

// The Trial API's phases of one batch and 8 gradient buckets, as trial_runner.cc records them.
void OneBatch(StepProfiler& profiler, int64_t b) {
  const absl::Time start = absl::Now();
  profiler.Begin(b, start);
  absl::Time t = start;
  for (const char* phase :
       {"dataloader_next", "to_device", "forward", "backward", "gradient_wait", "optimizer_step"}) {
    const absl::Time next = absl::Now();
    profiler.Phase(phase, t, next);
    t = next;
  }
  profiler.Phase("train_batch", start, t);
  std::vector<BucketTiming> buckets;
  for (int i = 0; i < 8; ++i) buckets.push_back({i, 1 << 20, start, t});
  profiler.Buckets(buckets);
  for (const char* phase : {"step_lr_schedulers", "from_device"}) {
    const absl::Time next = absl::Now();
    profiler.Phase(phase, t, next);
    t = next;
  }
  profiler.Phase("step", start, t);
  profiler.End();
}

void BM_ProfiledBatch(benchmark::State& state) {
  const fs::path dir =
      fs::temp_directory_path() / ("step_profiler_bench_" + std::to_string(::getpid()));
  StepProfiler profiler({.enabled = true, .begin_on_batch = 0, .rank = 0, .run_dir = dir.string()});
  int64_t b = 0;
  for (auto _ : state) OneBatch(profiler, b++);
  state.counters["bytes_per_batch"] =
      static_cast<double>(fs::file_size(profiler.path())) / static_cast<double>(b);
  fs::remove_all(dir);
}
BENCHMARK(BM_ProfiledBatch);

void BM_BatchOutsideTheWindow(benchmark::State& state) {
  StepProfiler profiler({.enabled = true,
                         .begin_on_batch = 1,
                         .end_after_batch = 1,
                         .rank = 0,
                         .run_dir = "/nonexistent"});
  int64_t b = 10;
  for (auto _ : state) OneBatch(profiler, b++);
}
BENCHMARK(BM_BatchOutsideTheWindow);

}  // namespace
}  // namespace cohort::runtime

BENCHMARK_MAIN();
