#include "wire/reports.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "common/small_file.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

constexpr ReportKind kAllKinds[] = {ReportKind::kTraining, ReportKind::kValidation,
                                    ReportKind::kCheckpoint, ReportKind::kCompleted,
                                    ReportKind::kPreempted};

// NaN is not JSON: null stands for it.
Json Number(double value) { return std::isnan(value) ? Json(nullptr) : Json(value); }

// Records an error on `key` when the metrics object has too many names or too long a name.
void CheckMetricNames(FieldReader& r, const char* key, const Json& metrics) {
  if (!r.ok() || !metrics.is_object()) return;
  if (metrics.size() > kMaxMetrics) {
    return r.Fail(
        key, absl::StrCat("must have at most ", kMaxMetrics, " metrics, got ", metrics.size()));
  }
  for (const auto& [name, value] : metrics.items()) {
    if (name.size() > kMaxMetricNameBytes) {
      return r.Fail(key, absl::StrCat("metric names must be at most ", kMaxMetricNameBytes,
                                      " bytes, got one of ", name.size(), " bytes starting \"",
                                      absl::CEscape(name.substr(0, 32)), "\""));
    }
  }
}

constexpr int kMaxMetricDepth = 8;

void Flatten(const std::string& prefix, const Json& value, int depth,
             std::map<std::string, double>* out) {
  if (value.is_number()) {
    const double number = value.get<double>();
    if (std::isfinite(number)) (*out)[prefix] = number;
  } else if (value.is_boolean()) {
    (*out)[prefix] = value.get<bool>() ? 1 : 0;
  } else if (value.is_object() && depth < kMaxMetricDepth) {
    for (const auto& [name, child] : value.items()) {
      Flatten(absl::StrCat(prefix, "/", name), child, depth + 1, out);
    }
  }
}

}  // namespace

std::map<std::string, double> MetricSeries(absl::string_view kind, const Json& metrics) {
  std::map<std::string, double> series;
  if (metrics.is_object()) Flatten(std::string(kind), metrics, 0, &series);
  return series;
}

const char* Name(ReportKind kind) {
  switch (kind) {
    case ReportKind::kTraining:
      return "training";
    case ReportKind::kValidation:
      return "validation";
    case ReportKind::kCheckpoint:
      return "checkpoint";
    case ReportKind::kCompleted:
      return "completed";
    case ReportKind::kPreempted:
      return "preempted";
  }
  return "unknown";
}

absl::StatusOr<ReportKind> ParseReportKind(absl::string_view text) {
  for (ReportKind kind : kAllKinds) {
    if (text == Name(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", text.substr(0, 40),
                   "' is not a report kind (one of training, validation, checkpoint, completed, "
                   "preempted)"));
}

Json ReportRecord::ToJson() const {
  Json j = {{"kind", Name(kind)}, {"time", time}};
  switch (kind) {
    case ReportKind::kTraining:
    case ReportKind::kValidation:
      j["steps_completed"] = steps_completed.value_or(0);
      j["metrics"] = metrics;
      break;
    case ReportKind::kCheckpoint:
      j["storage_id"] = storage_id;
      j["path"] = path;
      j["metadata"] = metadata;
      if (steps_completed) j["steps_completed"] = *steps_completed;
      break;
    case ReportKind::kCompleted:
      j["searcher_metric"] = Number(searcher_metric);
      if (length) j["length"] = *length;
      break;
    case ReportKind::kPreempted:
      break;
  }
  return j;
}

absl::StatusOr<ReportRecord> ParseReportRecord(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  ReportRecord rec;
  r.Enum("kind", &rec.kind, ParseReportKind, FieldReader::kRequired);
  r.Optional("time", &rec.time, {.min = 0, .max = kMaxUnixSeconds});
  if (!r.ok()) return r.status();
  switch (rec.kind) {
    case ReportKind::kTraining:
    case ReportKind::kValidation: {
      int64_t steps = 0;
      r.Required("steps_completed", &steps, {.min = 0});
      rec.steps_completed = steps;
      r.Object("metrics", &rec.metrics, FieldReader::kRequired);
      CheckMetricNames(r, "metrics", rec.metrics);
      break;
    }
    case ReportKind::kCheckpoint:
      r.Required("storage_id", &rec.storage_id, 1024);
      r.Optional("path", &rec.path, 4096);
      r.Object("metadata", &rec.metadata, FieldReader::kOptional);
      if (r.Has("steps_completed")) {
        int64_t steps = 0;
        r.Required("steps_completed", &steps, {.min = 0});
        rec.steps_completed = steps;
      }
      if (r.ok() && rec.storage_id.empty()) r.Fail("storage_id", "must not be empty");
      // It names a directory in the checkpoint storage: one plain name, never a path.
      if (r.ok() && !IsSafeName(rec.storage_id)) {
        r.Fail("storage_id", SafeNameError(rec.storage_id));
      }
      break;
    case ReportKind::kCompleted:
      r.Nullable("searcher_metric", &rec.searcher_metric);
      r.Optional("length", &rec.length, {.max = kMaxCount});
      if (r.ok() && rec.length && !(*rec.length >= 0)) {
        r.Fail("length", absl::StrCat("must be >= 0, got ", *rec.length));
      }
      break;
    case ReportKind::kPreempted:
      break;
  }
  COHORT_RETURN_IF_ERROR(r.status());
  return rec;
}

Json ProgressRecord::ToJson() const {
  Json j = Json::object();
  if (has_counts()) {
    j["completed"] = completed;
    j["total"] = total;
    j["unit"] = unit;
  }
  if (!training.is_null()) j["training"] = training;
  if (training_steps_completed) j["training_steps_completed"] = *training_steps_completed;
  if (!validation.is_null()) j["validation"] = validation;
  if (validation_steps_completed) j["validation_steps_completed"] = *validation_steps_completed;
  if (!latest_checkpoint.empty()) j["latest_checkpoint"] = latest_checkpoint;
  if (searcher_metric) j["searcher_metric"] = Number(*searcher_metric);
  if (preempted) j["preempted"] = true;
  j["time"] = time;
  return j;
}

absl::StatusOr<ProgressRecord> ReadProgressFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxProgressFileBytes);
  if (absl::IsNotFound(text.status())) return text.status();
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progress.json: ", text.status().message(),
        absl::IsResourceExhausted(text.status())
            ? " (it holds one progress record, rewritten each time: is the trial appending to it?)"
            : ""));
  }
  absl::StatusOr<Json> json = ParseJsonBounded<Json>(*text);
  if (!json.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("progress.json: ", json.status().message()));
  }
  return ParseProgressRecord(*json, "progress.json");
}

absl::StatusOr<ProgressRecord> ParseProgressRecord(const Json& json, absl::string_view context) {
  FieldReader r(json, std::string(context));
  ProgressRecord p;
  if (r.Has("completed")) {
    // The master turns both into int64 batch counts; the bound keeps that exact.
    r.Required("completed", &p.completed, {.max = kMaxCount});
    r.Required("total", &p.total, {.max = kMaxCount});
    p.unit = "batches";
    r.Optional("unit", &p.unit, 64);
    if (r.ok() && (p.completed < 0 || p.total < 0)) {
      r.Fail(p.completed < 0 ? "completed" : "total", "must be >= 0");
    }
  }
  r.Object("training", &p.training, FieldReader::kOptional);
  CheckMetricNames(r, "training", p.training);
  r.Object("validation", &p.validation, FieldReader::kOptional);
  CheckMetricNames(r, "validation", p.validation);
  int64_t steps = 0;
  if (r.Has("training_steps_completed")) {
    r.Required("training_steps_completed", &steps, {.min = 0});
    p.training_steps_completed = steps;
  }
  if (r.Has("validation_steps_completed")) {
    r.Required("validation_steps_completed", &steps, {.min = 0});
    p.validation_steps_completed = steps;
  }
  r.Optional("latest_checkpoint", &p.latest_checkpoint, 1024);
  if (json.is_object() && json.contains("searcher_metric")) {
    double metric = 0;
    r.Nullable("searcher_metric", &metric);
    p.searcher_metric = metric;
  }
  r.Optional("preempted", &p.preempted);
  r.Optional("time", &p.time, {.min = 0, .max = kMaxUnixSeconds});
  COHORT_RETURN_IF_ERROR(r.status());
  return p;
}

}  // namespace cohort::wire
