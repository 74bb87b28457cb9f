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
#include "common/json_bounded.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxLineBytes = 1 << 20;

struct PhaseSum {
  int64_t count = 0, total_us = 0;
  int64_t min_us = std::numeric_limits<int64_t>::max(), max_us = 0;
};

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

wire::StepTimings Summed(const std::map<std::pair<int, std::string>, PhaseSum>& sums,
                         int64_t records) {
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
  std::map<std::pair<int, std::string>, PhaseSum> sums;
  int64_t records = 0;
  for (const auto& [rank, path] : files) {
    std::ifstream in(path);
    if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path.string()));
    int64_t number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (records >= kMaxLocalRecords) {
        out.truncated = true;
        break;
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
  }
  out.timings = Summed(sums, records);
  return out;
}

}  // namespace cohort::cli
