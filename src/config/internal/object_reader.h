#pragma once
// ObjectReader: reads one map of a config tree field by field, checking each value's type and
// range, recording every problem in an ErrorList (never stopping at the first), and writing the
// accepted values and the defaults into the effective config. Finish() rejects the fields nobody
// asked for, with a did-you-mean suggestion. A field that is valid but that Cohort does not act
// on is read with Ignored(): type-checked like any other, kept in the effective config, and
// reported once as a warning. Thread-compatible.
//
// Example:
//   ObjectReader r(tree["resources"], "resources", &errors, &effective["resources"]);
//   int64_t slots = r.Int("slots_per_trial", 1, AtLeast(1)).value_or(1);
//   r.Ignored("shm_size", "Cohort starts no container", [&] { return r.String("shm_size"); });
//   r.Finish();
//
// A null value counts as absent (YAML `key:` or `key: ~` means "use the default").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "config/error_list.h"
#include "config/yaml_json.h"

namespace cohort::config::internal {

// Inclusive bounds unless exclusive_min (then the value must be > min).
struct Bounds {
  std::optional<double> min;
  std::optional<double> max;
  bool exclusive_min = false;
};
inline Bounds AtLeast(double min) { return Bounds{min, std::nullopt, false}; }
inline Bounds GreaterThan(double min) { return Bounds{min, std::nullopt, true}; }
inline Bounds Between(double min, double max) { return Bounds{min, max, false}; }

class ObjectReader {
 public:
  // `node` is the map at `path` ("" for the root). When it is not a map (and not null) the error
  // "<path>: expected a map, got <type>" is recorded and every getter sees absent fields.
  // `effective` (may be null) receives the normalized fields as an object.
  ObjectReader(const Json& node, std::string path, ErrorList* errors, Json* effective);

  const std::string& path() const { return path_; }
  std::string PathOf(absl::string_view key) const { return JoinPath(path_, key); }
  ErrorList* errors() const { return errors_; }
  bool is_map() const { return is_map_; }

  // True when the field is present and not null. Does not mark it as known.
  bool Has(absl::string_view key) const;

  // Marks `key` known and returns its value, or null when absent. Nothing is copied.
  const Json* Get(absl::string_view key);

  // Records "<path>.<key>: required field is missing" when absent; returns whether present.
  bool Require(absl::string_view key);

  // Typed getters: the value when present and valid, else `fallback`. A present value of the
  // wrong type records "expected <what>, got <type>"; out of bounds records "must be >= 1,
  // got -2". The result (value or fallback) is written to the effective config when it has one.
  std::optional<int64_t> Int(absl::string_view key, std::optional<int64_t> fallback = {},
                             Bounds bounds = {});
  std::optional<double> Number(absl::string_view key, std::optional<double> fallback = {},
                               Bounds bounds = {});
  std::optional<bool> Bool(absl::string_view key, std::optional<bool> fallback = {});
  // With `allowed` non-empty the value must be one of them ("must be one of a, b, c, got 'x';
  // did you mean a?").
  std::optional<std::string> String(absl::string_view key,
                                    std::optional<std::string> fallback = {},
                                    const std::vector<std::string>& allowed = {});
  // A list of strings.
  std::optional<std::vector<std::string>> StringList(absl::string_view key);
  // A list of integers, each within `bounds`.
  std::optional<std::vector<int64_t>> IntList(absl::string_view key, Bounds bounds = {});
  // A map whose contents are free-form (or checked by the caller): "expected a map" otherwise.
  // Copied as-is into the effective config; returns it or null (absent or not a map).
  const Json* Map(absl::string_view key);
  // Copies the field as-is (free-form) into the effective config; returns it or null.
  const Json* Raw(absl::string_view key);

  // Writes `value` under `key` in the effective config.
  void Set(absl::string_view key, Json value);

  // Records the warning "<path>.<key>: ignored: <why>" when the field is present and asks for
  // something: not null, false, "", [] or {} (Determined's defaults for what Cohort ignores), nor
  // equal to `unless` when that is given (a default such as resources.weight's 1).
  void Warn(absl::string_view key, absl::string_view why, const Json& unless = Json());

  // A field Cohort accepts but does not act on: `read` (one of the typed getters above, on the
  // same key) checks its type and bounds and keeps it in the effective config; then, unless
  // that found an error, Warn. Returns what `read` returned.
  template <typename Read>
  auto Ignored(absl::string_view key, absl::string_view why, Read read, const Json& unless = Json())
      -> decltype(read()) {
    const size_t errors_before = errors_->errors().size();
    auto result = read();
    if (errors_->errors().size() == errors_before) Warn(key, why, unless);
    return result;
  }

  // Reads the list at `key`, calling `item(node, path, out)` for each element with its path
  // ("<key>[i]") and an empty map in the effective list to fill. "expected a list" otherwise.
  template <typename Item>
  void ForEachItem(absl::string_view key, Item item) {
    const Json* list = Get(key);
    if (list == nullptr) return;
    if (!list->is_array()) {
      Error(key, absl::StrCat("expected a list, got ", DescribeValue(*list)));
      return;
    }
    Json scratch = Json::array();
    Json& out = effective_ != nullptr ? ((*effective_)[std::string(key)] = Json::array()) : scratch;
    for (size_t i = 0; i < list->size(); ++i) {
      out.push_back(Json::object());
      item((*list)[i], absl::StrCat(PathOf(key), "[", i, "]"), &out.back());
    }
  }

  // Records "unknown field; did you mean X?" for each field never asked for.
  void Finish();

 private:
  void Error(absl::string_view key, absl::string_view message);
  bool CheckBounds(absl::string_view key, double value, const Bounds& bounds);

  const Json& node_;
  std::string path_;
  ErrorList* errors_;
  Json* effective_;
  bool is_map_;
  std::vector<std::string> known_;
};

// "must be >= 1, got -2" style text for a value outside `bounds`, or empty when inside.
std::string BoundsViolation(double value, const Bounds& bounds);

}  // namespace cohort::config::internal
