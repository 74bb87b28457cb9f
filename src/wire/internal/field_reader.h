#pragma once
// FieldReader: reads the fields of one JSON object for wire's parsers, so that every parser is
// a short list of fields and every error reads the same way:
//   start action: missing "allocation"
//   start action: "slots" must be an integer >= 1, got "two"
//   report batch: "lines"[3]: missing "kind"
// The reader remembers the first error and ignores the reads after it; the parser returns
// status() at the end. Unknown fields are ignored (forward compatibility). Required fields must
// be present and not null; optional ones keep the caller's default when missing or null.
// Strings and arrays are bounded (kMaxStringBytes, an explicit max_size) so that untrusted input
// cannot make a reader keep unbounded data.
// Thread-compatible value type; it refers to the JSON it reads, which must outlive it.
//
// Example:
//   FieldReader r(json, "stop action");
//   StopAction a;
//   r.Required("allocation", &a.allocation);
//   r.Enum("mode", &a.mode, ParseStopMode, FieldReader::kOptional);
//   COHORT_RETURN_IF_ERROR(r.status());
//   return a;

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "wire/limits.h"

namespace cohort::wire::internal {

using Json = nlohmann::json;

// The longest string a field may hold unless a parser says otherwise (a config's YAML text is
// longer and says so).
inline constexpr size_t kMaxStringBytes = 64 << 10;

struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

// The bounds of a number field. The default admits any finite number; every double read is
// finite, so a value can be converted to int64 after a range check.
struct DoubleRange {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
};

// "an integer", "an integer >= 1", "an integer in [0, 65535]".
std::string DescribeInt(IntRange range);
// "a number", "a number <= 1e+15", "a number in [0, 1e+15]" (always finite).
std::string DescribeDouble(DoubleRange range);
// The JSON text of `value`, cut to a readable length (for "got ..." in errors).
std::string Shown(const Json& value);

class FieldReader {
 public:
  enum Need { kRequired, kOptional };

  // `context` begins every error message ("start action", "report line 3"). A `json` that is
  // not an object is the first error.
  FieldReader(const Json& json, std::string context);
  FieldReader(Json&& json, std::string context) = delete;  // it would outlive the temporary

  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  const std::string& context() const { return context_; }
  // Records an error about `key` (for checks across fields) unless one is recorded already.
  void Fail(absl::string_view key, absl::string_view what);
  // Whether the object has `key` with a non-null value.
  bool Has(const char* key) const;

  void Required(const char* key, std::string* out, size_t max_bytes = kMaxStringBytes);
  void Optional(const char* key, std::string* out, size_t max_bytes = kMaxStringBytes);
  void Required(const char* key, int64_t* out, IntRange range = {});
  void Optional(const char* key, int64_t* out, IntRange range = {});
  void Required(const char* key, int* out, IntRange range = {});
  void Optional(const char* key, int* out, IntRange range = {});
  // An id (trial, experiment): an integer in [1, kMaxId] (wire/limits.h).
  void RequiredId(const char* key, int64_t* out);
  // A finite number (integers too) within `range`. Not NaN: JSON has no NaN (see Nullable).
  void Required(const char* key, double* out, DoubleRange range = {});
  void Optional(const char* key, double* out, DoubleRange range = {});
  void Optional(const char* key, std::optional<double>* out, DoubleRange range = {});
  void Required(const char* key, bool* out);
  void Optional(const char* key, bool* out);
  // A number, or null for NaN (how nlohmann writes NaN); missing: NaN too.
  void Nullable(const char* key, double* out);
  // A JSON object, kept as it is (metrics, metadata, hyperparameters).
  void Object(const char* key, Json* out, Need need);
  // Any JSON value, kept as it is.
  void Value(const char* key, Json* out, Need need);

  // A string parsed by `parse` (an enum's Parse function, whose message is kept).
  template <typename E>
  void Enum(const char* key, E* out, absl::StatusOr<E> (*parse)(absl::string_view), Need need) {
    std::string text;
    if (need == kRequired) {
      Required(key, &text, 256);
    } else {
      if (!Has(key)) return;
      Optional(key, &text, 256);
    }
    if (!ok()) return;
    absl::StatusOr<E> value = parse(text);
    if (!value.ok()) return Fail(key, value.status().message());
    *out = *value;
  }

  // An array of at most `max_size` elements, each parsed by
  // `parse(const Json& element, const std::string& context) -> absl::StatusOr<T>`, where the
  // context names the element ("report batch: \"lines\"[3]").
  template <typename T, typename Parse>
  void Array(const char* key, std::vector<T>* out, size_t max_size, Need need, Parse parse) {
    const Json* array = ArrayField(key, max_size, need);
    if (array == nullptr) return;
    std::vector<T> items;
    items.reserve(array->size());
    for (size_t i = 0; i < array->size(); ++i) {
      absl::StatusOr<T> item = parse((*array)[i], ElementContext(key, i));
      if (!item.ok()) {
        status_ = item.status();
        return;
      }
      items.push_back(*std::move(item));
    }
    *out = std::move(items);
  }

  // The context of element `index` of array `key`, for nested parsers.
  std::string ElementContext(const char* key, size_t index) const;

 private:
  // The field's value when present and not null; records "missing" when required and absent.
  const Json* Field(const char* key, Need need);
  const Json* ArrayField(const char* key, size_t max_size, Need need);
  void ReadString(const char* key, std::string* out, size_t max_bytes, Need need);
  void ReadInt(const char* key, int64_t* out, IntRange range, Need need);
  void ReadDouble(const char* key, double* out, DoubleRange range, Need need);
  void ReadBool(const char* key, bool* out, Need need);

  const Json& json_;
  std::string context_;
  absl::Status status_;
};

// Elements of string arrays (agent ids, running allocations).
absl::StatusOr<std::string> ParseStringElement(const Json& json, const std::string& context);
// Elements of integer arrays (searcher operations).
absl::StatusOr<int64_t> ParsePositiveIntElement(const Json& json, const std::string& context);

}  // namespace cohort::wire::internal
