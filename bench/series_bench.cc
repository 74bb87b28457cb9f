// series_bench: how long the master takes to answer a chart of one metric series as the
// series grows to a million points (SQLite file, the master's own QueryPoints: downsampling to
// 1,000 points in SQL). Google Benchmark; the database is filled once per size, outside the
// timing, in a temporary directory.
//
//   build/bench/series_bench                 # 10k, 100k and 1M points
//   build/bench/series_bench --benchmark_filter=1000000

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "master/db/database.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;

struct Filled {
  std::unique_ptr<Database> db;
  int64_t trial = 0;
};

// A database file holding one trial whose series "validation/loss" has `points` points.
Filled& DatabaseWith(int64_t points) {
  static auto* filled = new std::map<int64_t, Filled>();
  auto it = filled->find(points);
  if (it != filled->end()) return it->second;
  const fs::path dir = fs::temp_directory_path() / ("series_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Filled f;
  f.db = OpenSqliteDatabase((dir / (std::to_string(points) + ".db")).string()).value();
  const int64_t exp = f.db->InsertExperiment({.name = "bench"}).value();
  f.trial = f.db->InsertTrial({.experiment_id = exp}).value();
  std::vector<PointRow> rows;
  for (int64_t b = 0; b < points; ++b) {
    rows.push_back({"validation/loss", "", b, 1e9 + b, std::sin(b / 1000.0) + 1.0 / (b + 1)});
    if (rows.size() == 100000 || b + 1 == points) {
      if (!f.db->InsertPoints(f.trial, rows).ok()) std::abort();
      rows.clear();
    }
  }
  return filled->emplace(points, std::move(f)).first->second;
}

// The whole series, downsampled to at most 1,000 points: a chart's first draw.
void BM_WholeSeriesDownsampled(benchmark::State& state) {
  Filled& f = DatabaseWith(state.range(0));
  size_t returned = 0;
  for (auto _ : state) {
    auto points =
        f.db->QueryPoints({.trial_id = f.trial, .name = "validation/loss", .max_points = 1000});
    if (!points.ok()) state.SkipWithError("query failed");
    returned = points->size();
  }
  state.counters["points_returned"] = static_cast<double>(returned);
}

// The newest tenth of the series, downsampled: a zoomed chart.
void BM_LastTenthDownsampled(benchmark::State& state) {
  Filled& f = DatabaseWith(state.range(0));
  for (auto _ : state) {
    auto points = f.db->QueryPoints({.trial_id = f.trial,
                                     .name = "validation/loss",
                                     .min_batch = state.range(0) * 9 / 10,
                                     .max_points = 1000});
    if (!points.ok()) state.SkipWithError("query failed");
  }
}

// The points newer than the last one seen: one poll of a followed chart.
void BM_FollowNewest(benchmark::State& state) {
  Filled& f = DatabaseWith(state.range(0));
  for (auto _ : state) {
    auto points = f.db->QueryPoints({.trial_id = f.trial,
                                     .name = "validation/loss",
                                     .min_batch = state.range(0) - 10,
                                     .max_points = 1000});
    if (!points.ok()) state.SkipWithError("query failed");
  }
}

BENCHMARK(BM_WholeSeriesDownsampled)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LastTenthDownsampled)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FollowNewest)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::master

BENCHMARK_MAIN();
