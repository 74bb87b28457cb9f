#include "master/searcher/operation.h"

#include <type_traits>

#include "absl/strings/str_cat.h"

namespace cohort::master::searcher {
namespace {

std::string AtRung(const Standing& s, absl::string_view verdict) {
  return absl::StrCat("adaptive_asha rung ", s.rung, " of ", s.rungs, " (", s.length, " ", s.unit,
                      "): searcher metric ",
                      std::isfinite(s.metric) ? absl::StrCat(s.metric) : "missing",
                      s.among_best ? " is among" : " is not among", " the best ", s.keep, " of ",
                      s.reached, " trials of its bracket there; ", verdict);
}

}  // namespace

int64_t TrialOf(const Operation& op) {
  return std::visit([](const auto& o) { return o.trial; }, op);
}

std::string LogLine(const Operation& op) {
  return std::visit(
      [](const auto& o) -> std::string {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, Continue>) {
          return AtRung(o.standing, "it goes on");
        } else if constexpr (std::is_same_v<T, Stop>) {
          return AtRung(o.standing, o.final ? "the trial stops"
                                            : "the trial stops (it resumes if later trials "
                                              "promote it)");
        } else if constexpr (std::is_same_v<T, Promote>) {
          return absl::StrCat("adaptive_asha promotes the trial at ", o.standing.length, " ",
                              o.standing.unit, ": it is now among the best ", o.standing.keep,
                              " of ", o.standing.reached,
                              " trials of its bracket there; it resumes from its checkpoint");
        } else if constexpr (std::is_same_v<T, Complete>) {
          return absl::StrCat("adaptive_asha promoted no further trial; the trial is ",
                              wire::Name(wire::TrialState::kCompleted));
        } else {
          return "";
        }
      },
      op);
}

std::string StoppedEarlyLine(int64_t batches, wire::TrialState now) {
  return absl::StrCat("stopped early by adaptive_asha after ", batches, " batches; it is ",
                      wire::Name(now));
}

}  // namespace cohort::master::searcher
