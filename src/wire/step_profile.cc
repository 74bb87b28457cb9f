#include "wire/step_profile.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {
namespace {

using internal::FieldReader;

// Element `i` of a span array: an integer in [0, max].
absl::StatusOr<int64_t> SpanInt(const Json& span, size_t i, int64_t max, absl::string_view what,
                                const std::string& context) {
  const Json& v = span[i];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > max) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": the ", what,
                                                   " must be an integer in [0, ", max, "], got ",
                                                   internal::Shown(v)));
  }
  return v.get<int64_t>();
}

absl::Status CheckTuple(const Json& json, size_t size, absl::string_view shape,
                        const std::string& context) {
  if (json.is_array() && json.size() == size) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(context, ": must be ", shape, ", got ", internal::Shown(json)));
}

absl::StatusOr<PhaseSpan> ParsePhase(const Json& json, const std::string& context) {
  COHORT_RETURN_IF_ERROR(CheckTuple(json, 3, "[name, start_us, duration_us]", context));
  PhaseSpan span;
  if (!json[0].is_string() || json[0].get_ref<const std::string&>().size() > kMaxPhaseNameBytes ||
      !IsSafeName(json[0].get_ref<const std::string&>())) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": the name must be a safe name of at most ", kMaxPhaseNameBytes,
                     " bytes ([A-Za-z0-9._-]), got ", internal::Shown(json[0])));
  }
  span.name = json[0].get<std::string>();
  COHORT_ASSIGN_OR_RETURN(span.start_us, SpanInt(json, 1, kMaxSpanMicros, "start", context));
  COHORT_ASSIGN_OR_RETURN(span.duration_us, SpanInt(json, 2, kMaxSpanMicros, "duration", context));
  return span;
}

absl::StatusOr<BucketSpan> ParseBucket(const Json& json, const std::string& context) {
  COHORT_RETURN_IF_ERROR(CheckTuple(json, 4, "[bucket, bytes, start_us, duration_us]", context));
  BucketSpan span;
  COHORT_ASSIGN_OR_RETURN(const int64_t bucket,
                          SpanInt(json, 0, kMaxStepBuckets - 1, "bucket", context));
  span.bucket = static_cast<int>(bucket);
  COHORT_ASSIGN_OR_RETURN(span.bytes, SpanInt(json, 1, int64_t{1} << 50, "bytes", context));
  COHORT_ASSIGN_OR_RETURN(span.start_us, SpanInt(json, 2, kMaxSpanMicros, "start", context));
  COHORT_ASSIGN_OR_RETURN(span.duration_us, SpanInt(json, 3, kMaxSpanMicros, "duration", context));
  return span;
}

}  // namespace

Json StepProfileRecord::ToJson() const {
  Json phase_array = Json::array();
  for (const PhaseSpan& p : phases) phase_array.push_back({p.name, p.start_us, p.duration_us});
  Json bucket_array = Json::array();
  for (const BucketSpan& b : buckets) {
    bucket_array.push_back({b.bucket, b.bytes, b.start_us, b.duration_us});
  }
  return {{"rank", rank},
          {"batch", batch},
          {"time", time},
          {"phases", phase_array},
          {"buckets", bucket_array}};
}

absl::StatusOr<StepProfileRecord> ParseStepProfileRecord(const Json& json,
                                                         absl::string_view context) {
  FieldReader r(json, std::string(context));
  StepProfileRecord rec;
  r.Required("rank", &rec.rank, {.min = 0, .max = 1 << 20});
  r.Required("batch", &rec.batch, {.min = 1, .max = kMaxId});
  r.Required("time", &rec.time, {.min = 0, .max = kMaxUnixSeconds});
  r.Array("phases", &rec.phases, kMaxStepPhases, FieldReader::kRequired, ParsePhase);
  r.Array("buckets", &rec.buckets, kMaxStepBuckets, FieldReader::kOptional, ParseBucket);
  COHORT_RETURN_IF_ERROR(r.status());
  return rec;
}

std::string StepProfilePath(int rank) {
  return absl::StrCat(kStepProfileDir, "/rank-", rank, ".jsonl");
}

}  // namespace cohort::wire
