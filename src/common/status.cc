#include "cohort/status.h"

#include "absl/strings/str_cat.h"

namespace cohort {

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace cohort
