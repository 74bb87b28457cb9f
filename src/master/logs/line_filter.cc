#include "master/logs/line_filter.h"

#include <re2/re2.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cohort::master::logs {
namespace {

// The web interface's (web/public/js/trial/logs_tab.js), so both show the same lines.
constexpr char kErrors[] = R"(\b(ERROR|FATAL|CRITICAL|Traceback)\b|^E\d{4} )";
constexpr char kWarnings[] = R"(\b(ERROR|FATAL|CRITICAL|Traceback|WARN|WARNING)\b|^[EW]\d{4} )";

}  // namespace

absl::StatusOr<LineFilter> LineFilter::Create(const LogQuery& query) {
  LineFilter f;
  f.query_ = query;
  if (query.level == "error" || query.level == "warning") {
    f.level_ = std::make_shared<const re2::RE2>(query.level == "error" ? kErrors : kWarnings);
  } else if (!query.level.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("level: must be warning or error, got '", query.level, "'"));
  }
  if (query.grep.size() > 1024) {
    return absl::InvalidArgumentError("grep: at most 1024 bytes");
  }
  if (query.since_ms && query.until_ms && *query.since_ms > *query.until_ms) {
    return absl::InvalidArgumentError("since: after until, so no line can match");
  }
  f.grep_lower_ = absl::AsciiStrToLower(query.grep);
  return f;
}

bool LineFilter::Matches(const LogRow& row) const {
  if (query_.since_ms && row.time_ms < *query_.since_ms) return false;
  if (query_.until_ms && row.time_ms >= *query_.until_ms) return false;
  if (level_ != nullptr && !re2::RE2::PartialMatch(row.line, *level_)) return false;
  return grep_lower_.empty() || absl::StrContains(absl::AsciiStrToLower(row.line), grep_lower_);
}

}  // namespace cohort::master::logs
