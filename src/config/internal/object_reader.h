#pragma once
// ObjectReader: reads one map of a config tree field by field, checking each value's type and
// range, recording every problem in an ErrorList (never stopping at the first), and writing the
// accepted values and the defaults into the effective config. Finish() rejects the fields nobody
// asked for, with a did-you-mean suggestion. Thread-compatible.
//
// Example:
//   ObjectReader r(tree["resources"], "resources", &errors, &effective["resources"]);
//   int64_t slots = r.Int("slots_per_trial", 1, AtLeast(1)).value_or(1);
//   r.Finish();
//
// A null value counts as absent (YAML `key:` or `key: ~` means "use the default").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  // Copies the field as-is (free-form) into the effective config; returns it or null.
  const Json* Raw(absl::string_view key);

  // Writes `value` under `key` in the effective config.
  void Set(absl::string_view key, Json value);

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
