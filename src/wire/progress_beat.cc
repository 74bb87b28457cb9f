#include "wire/progress_beat.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "wire/internal/field_reader.h"
#include "wire/limits.h"

namespace cohort::wire {

using internal::FieldReader;

nlohmann::json ProgressBeat::ToJson() const {
  return {{"rank", rank}, {"pid", pid}, {"batch", batch}, {"phase", phase}, {"time", time}};
}

absl::StatusOr<ProgressBeat> ParseProgressBeat(const nlohmann::json& json) {
  FieldReader r(json, "progress beat");
  ProgressBeat beat;
  r.Required("rank", &beat.rank, {.min = 0, .max = 1 << 20});
  r.Optional("pid", &beat.pid, {.min = 0, .max = 1 << 30});
  r.Optional("batch", &beat.batch, {.min = 0, .max = kMaxId});
  r.Optional("phase", &beat.phase, 128);
  r.Required("time", &beat.time, {.min = 0, .max = kMaxUnixSeconds});
  COHORT_RETURN_IF_ERROR(r.status());
  return beat;
}

std::string ProgressBeatPath(int rank) { return absl::StrCat("progress/rank-", rank, ".json"); }

}  // namespace cohort::wire
