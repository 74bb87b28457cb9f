#include <algorithm>
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

// Determined's searchers; Cohort runs the first five (config/creation_check.h refuses the rest).
const std::vector<std::string> kSearchers = {"single",        "random", "grid",  "adaptive_asha",
                                             "async_halving", "pbt",    "custom"};

// Searchers Determined dropped (it reports them as removed rather than unknown).
bool IsRemovedSearcher(const std::string& name) {
  return name == "adaptive" || name == "adaptive_simple" || name == "sync_halving";
}
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

namespace {

// adaptive_asha's fields beyond the common ones: its brackets come from bracket_rungs (the
// number of rungs of each bracket) when given, else from max_rungs and mode (config/asha.h).
void ReadAsha(ObjectReader& r, SearcherConfig& s) {
  s.max_rungs = r.Int("max_rungs", 5, Between(1, kMaxRungs)).value_or(5);
  s.mode = r.String("mode", "standard", kAshaModes).value_or("standard");
  std::optional<std::vector<int64_t>> rungs = r.IntList("bracket_rungs", Between(1, kMaxRungs));
  if (rungs && rungs->size() > static_cast<size_t>(kMaxRungs)) {
    r.errors()->Add(r.PathOf("bracket_rungs"),
                    absl::StrCat("must have at most ", kMaxRungs, " entries"));
  } else if (rungs) {
    s.bracket_rungs = *rungs;
  }
}

// Determined 0.38's length of adaptive_asha and async_halving (its max_length is deprecated
// there): max_time units of the validation metric time_metric. Cohort's trials train to their
// rungs as lengths, so time_metric must be one of the lengths' units (batches, records,
// epochs: the progress Determined's own training loops report under those names); the pair
// then stands for max_length {time_metric: max_time}, which it replaces.
void ReadMaxTime(ObjectReader& r, SearcherConfig& s) {
  const bool has_time = r.Has("max_time"), has_metric = r.Has("time_metric");
  if (!has_time && !has_metric) return;
  s.max_time = r.Int("max_time", std::nullopt, Between(1, kMaxLengthUnits));
  s.time_metric = r.String("time_metric");
  if (has_time != has_metric) {
    r.errors()->Add(r.PathOf(has_time ? "time_metric" : "max_time"),
                    "required with the other: max_time counts units of the metric time_metric "
                    "(for example time_metric: batches, max_time: 10000)");
    return;
  }
  if (!s.max_time || !s.time_metric) return;
  const auto unit = std::find(kLengthUnits.begin(), kLengthUnits.end(), *s.time_metric);
  if (unit == kLengthUnits.end()) {
    r.errors()->Add(
        r.PathOf("time_metric"),
        absl::StrCat("Cohort's rungs are lengths its trials train to: time_metric must be "
                     "batches, records or epochs, got '",
                     *s.time_metric, "'"));
    return;
  }
  if (s.max_length) {
    r.errors()->AddWarning(r.PathOf("max_length"),
                           "ignored: max_time and time_metric give the length (Determined 0.38 "
                           "deprecates max_length)");
  }
  s.max_length = Length{static_cast<Length::Unit>(unit - kLengthUnits.begin()), *s.max_time};
}

// pbt: validated only (Cohort has no population based training).
void ReadPbt(ObjectReader& r, ErrorList* errors, Json* effective) {
  r.Require("population_size");
  r.Int("population_size", std::nullopt, Between(1, kMaxTrials));
  r.Require("num_rounds");
  r.Int("num_rounds", std::nullopt, AtLeast(1));
  r.Require("length_per_round");
  if (const Json* length = r.Get("length_per_round")) {
    ParseLength(*length, r.PathOf("length_per_round"), /*allow_zero=*/false, errors,
                effective != nullptr ? &(*effective)["length_per_round"] : nullptr);
  }
  for (const char* key : {"replace_function", "explore_function"}) {
    r.Require(key);
    const Json* f = r.Get(key);
    if (f == nullptr) continue;
    ObjectReader fr(*f, r.PathOf(key), errors, effective != nullptr ? &(*effective)[key] : nullptr);
    if (std::string(key) == "replace_function") {
      fr.Require("truncate_fraction");
      fr.Number("truncate_fraction", std::nullopt, Between(0, 0.5));
    } else {
      fr.Require("resample_probability");
      fr.Number("resample_probability", std::nullopt, Between(0, 1));
      fr.Require("perturb_factor");
      fr.Number("perturb_factor", std::nullopt, Between(0, 1));
    }
    fr.Finish();
  }
}

// max_length: a length, or (as Determined still accepts) a bare integer, read as batches.
void ReadMaxLength(ObjectReader& r, SearcherConfig& s, ErrorList* errors, Json* effective) {
  const Json* length = r.Get("max_length");
  if (length == nullptr) return;
  if (length->is_number_integer()) {
    if (auto n = r.Int("max_length", std::nullopt, Between(1, kMaxLengthUnits))) {
      s.max_length = Length{Length::Unit::kBatches, *n};
    }
    return;
  }
  s.max_length = ParseLength(*length, r.PathOf("max_length"), /*allow_zero=*/false, errors,
                             effective != nullptr ? &(*effective)["max_length"] : nullptr);
}

void ReadMetric(ObjectReader& r, SearcherConfig& s, ErrorList* errors) {
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
}

// Warm starts: every trial's weights start from that checkpoint (the master resolves it).
void ReadWarmStart(ObjectReader& r, SearcherConfig& s) {
  s.source_trial_id = r.Int("source_trial_id", std::nullopt, AtLeast(1));
  s.source_checkpoint_uuid = r.String("source_checkpoint_uuid");
  if (s.source_checkpoint_uuid && s.source_checkpoint_uuid->size() > kMaxNameBytes) {
    r.errors()->Add(r.PathOf("source_checkpoint_uuid"),
                    absl::StrCat("must be at most ", kMaxNameBytes, " bytes"));
  }
}

}  // namespace

SearcherConfig ParseSearcher(const Json& node, ErrorList* errors, Json* effective) {
  SearcherConfig s;
  ObjectReader r(node, "searcher", errors, effective);
  const Json* given = r.Get("name");
  if (given != nullptr && given->is_string() && IsRemovedSearcher(given->get<std::string>())) {
    // Its other fields are that searcher's, so they are not checked.
    errors->Add(r.PathOf("name"), absl::StrCat("the ", given->get<std::string>(),
                                               " searcher was removed from Determined; use "
                                               "adaptive_asha"));
    return s;
  }
  std::optional<std::string> name = r.String("name", "single", kSearchers);
  const bool known = name.has_value();
  if (known) s.name = *name;
  // With an unknown name every searcher's fields are accepted, so only the name is reported.
  auto is = [&](std::initializer_list<const char*> names) {
    if (!known) return true;
    for (const char* n : names) {
      if (s.name == n) return true;
    }
    return false;
  };
  ReadMetric(r, s, errors);
  ReadWarmStart(r, s);
  if (is({"adaptive_asha", "async_halving"}) && !r.Has("max_time")) r.Require("max_length");
  const bool has_length = !known || (s.name != "custom" && s.name != "pbt");
  if (has_length) ReadMaxLength(r, s, errors, effective);
  if (is({"random", "adaptive_asha", "async_halving"})) {
    r.Require("max_trials");
    s.max_trials = r.Int("max_trials", std::nullopt, Between(1, kMaxTrials)).value_or(1);
  }
  if (is({"random", "grid", "adaptive_asha", "async_halving"})) {
    s.max_concurrent_trials =
        r.Int("max_concurrent_trials", 16, Between(0, kMaxTrials)).value_or(16);
  }
  if (is({"adaptive_asha", "async_halving"})) {
    s.divisor = r.Number("divisor", 4.0, GreaterThan(1)).value_or(4.0);
    s.stop_once = r.Bool("stop_once", false).value_or(false);
  }
  if (is({"adaptive_asha"})) ReadAsha(r, s);
  if (is({"adaptive_asha", "async_halving"})) ReadMaxTime(r, s);
  if (is({"async_halving"})) {
    if (known) r.Require("num_rungs");
    s.num_rungs = r.Int("num_rungs", std::nullopt, Between(1, kMaxRungs));
  }
  if (is({"pbt"})) ReadPbt(r, errors, effective);
  if (is({"custom"})) r.String("unit", std::nullopt, kLengthUnits);
  if (known && !is({"single", "random", "grid", "adaptive_asha", "async_halving"})) {
    errors->AddWarning(r.PathOf("name"), absl::StrCat("the ", s.name,
                                                      " searcher is not implemented by Cohort: "
                                                      "experiment create refuses it (use single, "
                                                      "random, grid, adaptive_asha or "
                                                      "async_halving)"));
  }
  r.Finish();
  return s;
}

}  // namespace cohort::config::internal
