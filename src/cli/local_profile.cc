#include "cli/local_profile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/clock.h"
#include "common/json_bounded.h"
#include "sampler/proc_counter_source.h"
#include "wire/system_metrics.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxLineBytes = 1 << 20;

struct PhaseSum {
  int64_t count = 0, total_us = 0;
  int64_t min_us = std::numeric_limits<int64_t>::max(), max_us = 0;
};

// Per (rank, phase).
using PhaseSums = std::map<std::pair<int, std::string>, PhaseSum>;

// The rank files of DIR/profile, by rank.
std::map<int, fs::path> RankFiles(const fs::path& dir) {
  std::map<int, fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir / std::string(wire::kStepProfileDir), ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int rank = -1;
    if (absl::StartsWith(name, "rank-") && absl::EndsWith(name, ".jsonl") &&
        absl::SimpleAtoi(name.substr(5, name.size() - 11), &rank) && rank >= 0) {
      files[rank] = it->path();
    }
  }
  return files;
}

constexpr char kSystemFile[] = "system.jsonl";
constexpr char kLocalMachine[] = "local";

// One series' points as the master's series list sums them up.
struct SeriesSum {
  wire::SeriesSummary summary;
  double total = 0;
  void Add(int64_t batch, double time, double value) {
    wire::SeriesSummary& s = summary;
    if (s.points == 0) {
      s.first_batch = batch;
      s.min_value = s.max_value = value;
    }
    ++s.points;
    total += value;
    s.last_batch = batch;
    s.last_time = time;
    s.last_value = value;
    s.min_value = std::min(s.min_value, value);
    s.max_value = std::max(s.max_value, value);
    s.mean_value = total / static_cast<double>(s.points);
  }
};

// DIR/profile/system.jsonl summed up per series (none when the file is absent).
wire::SeriesList SystemSeries(const fs::path& dir, int64_t* skipped) {
  std::map<std::pair<std::string, std::string>, SeriesSum> sums;
  std::ifstream in(dir / std::string(wire::kStepProfileDir) / kSystemFile);
  int64_t records = 0;
  for (std::string line; records < kMaxLocalRecords && std::getline(in, line);) {
    absl::StatusOr<nlohmann::json> json = line.size() > kMaxLineBytes
                                              ? absl::InvalidArgumentError("too long")
                                              : ParseJsonBounded(line);
    absl::StatusOr<wire::SystemMetricsRecord> record =
        json.ok() ? wire::ParseSystemMetricsRecord(*json) : json.status();
    const nlohmann::json batch = json.ok() ? json->value("batch", nlohmann::json()) : nullptr;
    if (!record.ok() || !batch.is_number_integer()) {
      ++*skipped;
      continue;
    }
    ++records;
    const int64_t b = batch.get<int64_t>();
    for (const auto& [name, value] : record->metrics) {
      sums[{name, kLocalMachine}].Add(b, record->time, value);
    }
    for (const wire::GpuMetricsRecord& gpu : record->gpus) {
      sums[{"gpu_util", gpu.uuid}].Add(b, record->time, gpu.gpu_util);
      sums[{"gpu_free_memory", gpu.uuid}].Add(b, record->time, gpu.gpu_free_memory);
    }
  }
  wire::SeriesList list;
  for (auto& [key, sum] : sums) {
    sum.summary.name = key.first;
    sum.summary.label = key.second;
    list.series.push_back(sum.summary);
  }
  return list;
}

wire::StepTimings Summed(const PhaseSums& sums, int64_t records) {
  wire::StepTimings out{.trial_id = 0, .profiled_steps = records, .ranks = {}};
  for (const auto& [key, sum] : sums) {
    if (out.ranks.empty() || out.ranks.back().rank != key.first) {
      out.ranks.push_back({key.first, {}});
    }
    const double count = static_cast<double>(std::max<int64_t>(1, sum.count));
    out.ranks.back().phases.push_back(
        {key.second, sum.count, static_cast<double>(sum.total_us) / count / 1000.0,
         static_cast<double>(sum.min_us) / 1000.0, static_cast<double>(sum.max_us) / 1000.0});
  }
  return out;
}

// Reads one rank's file into `out` (its records in the batch range, its lines skipped) and
// `sums`; `records` counts every record read so far, up to kMaxLocalRecords.
absl::Status ReadRankFile(const fs::path& path, std::optional<int64_t> from_batch,
                          std::optional<int64_t> to_batch, LocalProfile& out, PhaseSums& sums,
                          int64_t& records) {
  std::ifstream in(path);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path.string()));
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (records >= kMaxLocalRecords) {
      out.truncated = true;
      return absl::OkStatus();
    }
    absl::StatusOr<nlohmann::json> json = line.size() > kMaxLineBytes
                                              ? absl::InvalidArgumentError("too long")
                                              : ParseJsonBounded(line);
    absl::StatusOr<wire::StepProfileRecord> record =
        json.ok() ? wire::ParseStepProfileRecord(
                        *json, absl::StrCat(path.filename().string(), " line ", number))
                  : json.status();
    if (!record.ok()) {
      ++out.skipped_lines;
      continue;
    }
    ++records;
    for (const wire::PhaseSpan& span : record->phases) {
      PhaseSum& sum = sums[{record->rank, span.name}];
      ++sum.count;
      sum.total_us += span.duration_us;
      sum.min_us = std::min(sum.min_us, span.duration_us);
      sum.max_us = std::max(sum.max_us, span.duration_us);
    }
    if ((!from_batch || record->batch >= *from_batch) &&
        (!to_batch || record->batch <= *to_batch)) {
      out.records.push_back(*std::move(record));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LocalProfile> ReadLocalProfile(const std::string& run_dir,
                                              std::optional<int64_t> from_batch,
                                              std::optional<int64_t> to_batch) {
  const std::map<int, fs::path> files = RankFiles(run_dir);
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        run_dir, " holds no ", wire::kStepProfileDir,
        "/rank-<R>.jsonl: give a trial's directory of a local run (cohort-runs/<experiment>/"
        "trial-<id>) that was profiled (profiling: {enabled: true} in its config)"));
  }
  LocalProfile out;
  PhaseSums sums;
  int64_t records = 0;
  for (const auto& [rank, path] : files) {
    COHORT_RETURN_IF_ERROR(ReadRankFile(path, from_batch, to_batch, out, sums, records));
  }
  out.timings = Summed(sums, records);
  out.system = SystemSeries(run_dir, &out.skipped_lines);
  return out;
}

std::unique_ptr<LocalSystemSampler> LocalSystemSampler::Start(const std::string& run_dir,
                                                              const config::Profiling& profiling,
                                                              std::ostream& err) {
  if (!profiling.enabled) return nullptr;
  std::unique_ptr<LocalSystemSampler> local(new LocalSystemSampler(profiling));
  const fs::path dir = fs::path(run_dir) / std::string(wire::kStepProfileDir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  local->out_.open(dir / kSystemFile, std::ios::app);
  if (!local->out_) {
    err << "warning: no system metrics: cannot write " << (dir / kSystemFile).string() << "\n";
    return nullptr;
  }
  LocalSystemSampler* self = local.get();
  local->sampler_ = std::make_unique<sampler::SystemSampler>(
      sampler::SystemSamplerOptions{}, std::make_unique<sampler::ProcCounterSource>(), RealClock(),
      [self](const sampler::SystemMetrics& m) { self->Write(m); });
  if (absl::Status started = local->sampler_->Start(); !started.ok()) {
    err << "warning: no system metrics: " << started.message() << "\n";
    return nullptr;
  }
  return local;
}

LocalSystemSampler::~LocalSystemSampler() {
  if (sampler_ != nullptr) sampler_->Stop();
}

void LocalSystemSampler::Write(const sampler::SystemMetrics& m) {
  const int64_t batch = batch_.load();
  if (batch < window_.begin_on_batch ||
      (window_.end_after_batch && batch > *window_.end_after_batch)) {
    return;  // outside the profiling window, as the agent samples
  }
  wire::SystemMetricsRecord record{
      absl::ToDoubleSeconds(m.time - absl::UnixEpoch()), kLocalMachine, m.metrics, {}};
  for (const sampler::GpuMetrics& gpu : m.gpus) {
    record.gpus.push_back({gpu.uuid, gpu.gpu_util, gpu.gpu_free_memory});
  }
  nlohmann::json line = record.ToJson();
  line["batch"] = batch;
  out_ << line.dump() << "\n" << std::flush;
}

}  // namespace cohort::cli
