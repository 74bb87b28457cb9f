#include "wire/trace_events.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"

namespace cohort::wire {
namespace {

using Json = nlohmann::json;

constexpr int kTrainingThread = 0;
constexpr int kCommunicationThread = 1;

Json Metadata(const char* name, int pid, std::optional<int> tid, Json args) {
  Json e = {{"ph", "M"}, {"name", name}, {"pid", pid}, {"args", std::move(args)}};
  if (tid) e["tid"] = *tid;
  return e;
}

void AddRankMetadata(int rank, Json& events) {
  events.push_back(
      Metadata("process_name", rank, std::nullopt, {{"name", absl::StrCat("rank ", rank)}}));
  events.push_back(Metadata("process_sort_index", rank, std::nullopt, {{"sort_index", rank}}));
  events.push_back(Metadata("thread_name", rank, kTrainingThread, {{"name", "training"}}));
  events.push_back(
      Metadata("thread_name", rank, kCommunicationThread, {{"name", "gradient communication"}}));
}

// The record's spans as complete ("X") events, `offset_us` after the document's start.
void AddRecord(const StepProfileRecord& r, int64_t offset_us, Json& events) {
  std::vector<const PhaseSpan*> phases;
  for (const PhaseSpan& p : r.phases) phases.push_back(&p);
  // A parent before its children: by start, the longer first.
  std::stable_sort(phases.begin(), phases.end(), [](const auto* a, const auto* b) {
    return a->start_us != b->start_us ? a->start_us < b->start_us : a->duration_us > b->duration_us;
  });
  for (const PhaseSpan* p : phases) {
    events.push_back({{"ph", "X"},
                      {"name", p->name},
                      {"cat", "step"},
                      {"pid", r.rank},
                      {"tid", kTrainingThread},
                      {"ts", offset_us + p->start_us},
                      {"dur", p->duration_us},
                      {"args", {{"batch", r.batch}}}});
  }
  for (const BucketSpan& b : r.buckets) {
    events.push_back({{"ph", "X"},
                      {"name", absl::StrCat("bucket ", b.bucket)},
                      {"cat", "gradients"},
                      {"pid", r.rank},
                      {"tid", kCommunicationThread},
                      {"ts", offset_us + b.start_us},
                      {"dur", b.duration_us},
                      {"args", {{"batch", r.batch}, {"bytes", b.bytes}}}});
  }
}

}  // namespace

Json TraceEvents(int64_t trial_id, const std::vector<StepProfileRecord>& records,
                 bool truncated) {
  double start = 0;
  if (!records.empty()) {
    start = std::min_element(records.begin(), records.end(), [](const auto& a, const auto& b) {
              return a.time < b.time;
            })->time;
  }
  Json events = Json::array();
  std::set<int> ranks;
  for (const StepProfileRecord& r : records) ranks.insert(r.rank);
  for (int rank : ranks) AddRankMetadata(rank, events);
  for (const StepProfileRecord& r : records) {
    AddRecord(r, std::llround((r.time - start) * 1e6), events);
  }
  return {{"displayTimeUnit", "ms"},
          {"otherData",
           {{"trial_id", trial_id}, {"start_unix_seconds", start}, {"truncated", truncated}}},
          {"traceEvents", std::move(events)}};
}

}  // namespace cohort::wire
