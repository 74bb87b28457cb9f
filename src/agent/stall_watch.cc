#include "agent/stall_watch.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::agent {
namespace {

double Age(const RankState& r, absl::Time now) {
  return std::max(0.0, absl::ToDoubleSeconds(now - absl::FromUnixMicros(static_cast<int64_t>(
                                                        r.beat.time * 1e6))));
}

bool InCollective(const RankState& r) { return absl::StartsWith(r.beat.phase, "in "); }

// The rank the others wait for: a stopped one, else the oldest beat outside a collective, else
// the oldest beat.
const RankState* Culprit(const std::vector<RankState>& ranks, absl::Time now) {
  const RankState* culprit = nullptr;
  const auto older = [&](const RankState* a, const RankState& b) {
    return a == nullptr || Age(b, now) > Age(*a, now);
  };
  for (const RankState& r : ranks) {
    if (r.stopped && older(culprit, r)) culprit = &r;
  }
  if (culprit != nullptr) return culprit;
  for (const RankState& r : ranks) {
    if (!InCollective(r) && older(culprit, r)) culprit = &r;
  }
  if (culprit != nullptr) return culprit;
  for (const RankState& r : ranks) {
    if (older(culprit, r)) culprit = &r;
  }
  return culprit;
}

}  // namespace

StallVerdict JudgeProgress(const std::vector<RankState>& ranks, absl::Time now,
                           absl::Duration deadline) {
  const double warn = std::min(60.0, absl::ToDoubleSeconds(deadline) / 2);
  double waited = 0;  // the longest wait in evidence: in a collective, or stopped
  std::vector<std::string> waiting;
  for (const RankState& r : ranks) {
    const double age = Age(r, now);
    if (!r.stopped && !InCollective(r)) continue;
    waited = std::max(waited, age);
    if (InCollective(r) && !r.stopped && age >= warn) {
      waiting.push_back(absl::StrCat("rank ", r.beat.rank, " waits ", r.beat.phase));
    }
  }
  StallVerdict verdict;
  const RankState* culprit = Culprit(ranks, now);
  if (waited < warn || culprit == nullptr) return verdict;
  const RankState& c = *culprit;
  if (!c.stopped && InCollective(c)) {
    // Every rank here waits in a collective: the one they wait for runs on another node (whose
    // agent names it).
    verdict.note = absl::StrCat(absl::StrJoin(waiting, ", "), " for ", std::llround(waited),
                                " s (for a rank on another node)");
  } else {
    verdict.note = absl::StrCat(
        "rank ", c.beat.rank, " has made no progress for ", std::llround(Age(c, now)), " s (",
        c.stopped ? absl::StrCat("its process ", c.beat.pid, " is stopped; ") : std::string(),
        "last: ", c.beat.phase, c.beat.batch > 0 ? absl::StrCat(", batch ", c.beat.batch) : "",
        ")");
    if (!waiting.empty()) absl::StrAppend(&verdict.note, "; ", absl::StrJoin(waiting, ", "));
  }
  verdict.fail = waited >= absl::ToDoubleSeconds(deadline);
  return verdict;
}

}  // namespace cohort::agent
