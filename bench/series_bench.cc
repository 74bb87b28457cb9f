// series_bench: how long the master takes to answer a chart of one metric series as the
// series grows to a million points (SQLite file, the master's own QueryPoints: downsampling to
// 1,000 points in SQL). Google Benchmark; the database is filled once per size, outside the
// timing, in a temporary directory.
//
//   build/bench/series_bench                 # 10k, 100k and 1M points
//   build/bench/series_bench --benchmark_filter=1000000
//   build/bench/series_bench --benchmark_filter=ExperimentCurves   # 1,000 trials x 10,000

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

// An experiment of 1,000 trials with 10,000 points each of "validation/loss" (10 million
// points, filled once, about a minute).
Filled& ExperimentOfThousandTrials() {
  static Filled* filled = [] {
    const fs::path dir = fs::temp_directory_path() / ("series_bench_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    auto* f = new Filled;
    f->db = OpenSqliteDatabase((dir / "experiment.db").string()).value();
    const int64_t exp = f->db->InsertExperiment({.name = "bench"}).value();
    std::vector<PointRow> rows;
    for (int t = 0; t < 1000; ++t) {
      const int64_t trial = f->db->InsertTrial({.experiment_id = exp}).value();
      for (int64_t b = 0; b < 10000; ++b) {
        rows.push_back({"validation/loss", "", b, 1e9 + b, (1.0 + t % 7) / (b + 10.0)});
      }
      if (!f->db->InsertPoints(trial, rows).ok()) std::abort();
      rows.clear();
    }
    f->trial = exp;  // here: the experiment
    return f;
  }();
  return *filled;
}

// The experiment page's learning curves at 1,000 trials x 10,000 points: every trial's series
// downsampled to state.range(0) points (the page asks for 200 per trial at 1,000 trials, at
// most 1,000), as Series::ExperimentSeries reads them (one QueryPoints per trial).
void BM_ExperimentCurves(benchmark::State& state) {
  Filled& f = ExperimentOfThousandTrials();
  size_t returned = 0;
  for (auto _ : state) {
    auto trials = f.db->ListTrials(f.trial);
    if (!trials.ok()) state.SkipWithError("listing the trials failed");
    returned = 0;
    for (const TrialRow& t : *trials) {
      auto points = f.db->QueryPoints({.trial_id = t.id,
                                       .name = "validation/loss",
                                       .max_points = static_cast<int>(state.range(0))});
      if (!points.ok()) state.SkipWithError("query failed");
      returned += points->size();
    }
  }
  state.counters["points_returned"] = static_cast<double>(returned);
}

BENCHMARK(BM_ExperimentCurves)->Arg(200)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(3);

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
