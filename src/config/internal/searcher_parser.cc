#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"
#include "config/limits.h"

namespace cohort::config::internal {
namespace {

const std::vector<std::string> kSearchers = {"single", "random", "grid", "adaptive_asha"};
const std::vector<std::string> kAshaModes = {"aggressive", "standard", "conservative"};
const std::vector<std::string> kLengthUnits = {"batches", "records", "epochs"};
constexpr char kMetricHint[] =
    "the name of a validation metric the trial reports, for example validation_loss";

}  // namespace

std::optional<Length> ParseLength(const Json& node, const std::string& path, bool allow_zero,
                                  ErrorList* errors, Json* effective) {
  const char* kShape = "{batches: N}, {records: N} or {epochs: N}";
  if (!node.is_object()) {
    errors->Add(path, absl::StrCat("expected ", kShape, ", got ", DescribeValue(node)));
    return std::nullopt;
  }
  if (node.size() != 1) {
    errors->Add(path, absl::StrCat("expected exactly one of batches, records, epochs, got ",
                                   node.size(), " fields"));
    if (node.empty()) return std::nullopt;
  }
  ObjectReader r(node, path, errors, effective);
  std::optional<Length> result;
  for (size_t i = 0; i < kLengthUnits.size(); ++i) {
    if (!r.Has(kLengthUnits[i])) {
      r.Get(kLengthUnits[i]);
      continue;
    }
    std::optional<int64_t> value =
        r.Int(kLengthUnits[i], std::nullopt, Between(allow_zero ? 0 : 1, kMaxLengthUnits));
    if (value && !result) result = Length{static_cast<Length::Unit>(i), *value};
  }
  r.Finish();
  return result;
}

SearcherConfig ParseSearcher(const Json& node, ErrorList* errors, Json* effective) {
  SearcherConfig s;
  ObjectReader r(node, "searcher", errors, effective);
  std::optional<std::string> name = r.String("name", "single", kSearchers);
  const bool known = name.has_value();
  if (known) s.name = *name;
  // With an unknown name every searcher's fields are accepted, so only the name is reported.
  const bool random = s.name == "random" || !known;
  const bool grid = s.name == "grid" || !known;
  const bool asha = s.name == "adaptive_asha" || !known;

  // Every searcher needs it, as in Determined: it names the validation metric that ranks trials
  // (and, with smaller_is_better, says which way is better), even when only one trial runs.
  if (!r.Has("metric")) {
    r.Get("metric");
    errors->Add(r.PathOf("metric"), absl::StrCat("required field is missing (", kMetricHint, ")"));
  } else if (std::optional<std::string> metric = r.String("metric")) {
    if (absl::StripAsciiWhitespace(*metric).empty()) {
      errors->Add(r.PathOf("metric"), absl::StrCat("must not be empty (", kMetricHint, ")"));
    }
    if (metric->size() > kMaxNameBytes) {
      errors->Add(r.PathOf("metric"),
                  absl::StrCat("must be at most ", kMaxNameBytes, " bytes, got ", metric->size()));
    }
    s.metric = *std::move(metric);
  }
  s.smaller_is_better = r.Bool("smaller_is_better", true).value_or(true);

  if (asha) r.Require("max_length");
  if (const Json* length = r.Get("max_length")) {
    s.max_length = ParseLength(*length, r.PathOf("max_length"), /*allow_zero=*/false, errors,
                               effective != nullptr ? &(*effective)["max_length"] : nullptr);
  }
  if (random || asha) {
    r.Require("max_trials");
    s.max_trials = r.Int("max_trials", std::nullopt, Between(1, kMaxTrials)).value_or(1);
  }
  if (random || grid || asha) {
    s.max_concurrent_trials =
        r.Int("max_concurrent_trials", 16, Between(0, kMaxTrials)).value_or(16);
  }
  if (asha) {
    s.max_rungs = r.Int("max_rungs", 5, Between(1, kMaxRungs)).value_or(5);
    s.divisor = r.Number("divisor", 4.0, GreaterThan(1)).value_or(4.0);
    s.mode = r.String("mode", "standard", kAshaModes).value_or("standard");
    s.stop_once = r.Bool("stop_once", false).value_or(false);
  }
  r.Finish();
  return s;
}

}  // namespace cohort::config::internal
