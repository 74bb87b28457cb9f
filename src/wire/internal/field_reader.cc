#include "wire/internal/field_reader.h"

#include <cmath>

namespace cohort::wire::internal {
namespace {

constexpr size_t kShownBytes = 60;

std::string Quoted(absl::string_view key) { return absl::StrCat("\"", key, "\""); }

}  // namespace

std::string DescribeInt(IntRange range) {
  // The limits of the field's C++ type are not worth saying; any other limit is.
  const bool no_min = range.min == std::numeric_limits<int>::min() ||
                      range.min == std::numeric_limits<int64_t>::min();
  const bool no_max = range.max == std::numeric_limits<int>::max() ||
                      range.max == std::numeric_limits<int64_t>::max();
  if (no_min && no_max) return "an integer";
  if (no_max) return absl::StrCat("an integer >= ", range.min);
  if (no_min) return absl::StrCat("an integer <= ", range.max);
  return absl::StrCat("an integer in [", range.min, ", ", range.max, "]");
}

std::string DescribeDouble(DoubleRange range) {
  const DoubleRange any;
  if (range.min == any.min && range.max == any.max) return "a number";
  if (range.max == any.max) return absl::StrCat("a number >= ", range.min);
  if (range.min == any.min) return absl::StrCat("a number <= ", range.max);
  return absl::StrCat("a number in [", range.min, ", ", range.max, "]");
}

std::string Shown(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > kShownBytes) text = absl::StrCat(text.substr(0, kShownBytes), "...");
  return text;
}

FieldReader::FieldReader(const Json& json, std::string context)
    : json_(json), context_(std::move(context)) {
  if (!json_.is_object()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(context_, ": must be a JSON object, got ", Shown(json_)));
  }
}

void FieldReader::Fail(absl::string_view key, absl::string_view what) {
  if (!ok()) return;
  status_ = absl::InvalidArgumentError(absl::StrCat(context_, ": ", Quoted(key), " ", what));
}

bool FieldReader::Has(const char* key) const {
  if (!json_.is_object()) return false;
  auto it = json_.find(key);
  return it != json_.end() && !it->is_null();
}

const Json* FieldReader::Field(const char* key, Need need) {
  if (!ok()) return nullptr;
  auto it = json_.find(key);
  if (it == json_.end() || it->is_null()) {
    if (need == kRequired) {
      status_ = absl::InvalidArgumentError(absl::StrCat(context_, ": missing ", Quoted(key)));
    }
    return nullptr;
  }
  return &*it;
}

std::string FieldReader::ElementContext(const char* key, size_t index) const {
  return absl::StrCat(context_, ": ", Quoted(key), "[", index, "]");
}

const Json* FieldReader::ArrayField(const char* key, size_t max_size, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    Fail(key, absl::StrCat("must be an array, got ", Shown(*v)));
    return nullptr;
  }
  if (v->size() > max_size) {
    Fail(key, absl::StrCat("must have at most ", max_size, " elements, got ", v->size()));
    return nullptr;
  }
  return v;
}

void FieldReader::ReadString(const char* key, std::string* out, size_t max_bytes, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return;
  if (!v->is_string()) return Fail(key, absl::StrCat("must be a string, got ", Shown(*v)));
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    return Fail(key, absl::StrCat("must be at most ", max_bytes, " bytes, got ", s.size()));
  }
  *out = s;
}

void FieldReader::ReadInt(const char* key, int64_t* out, IntRange range, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return;
  int64_t value = 0;
  bool integral = false;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    integral = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    value = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    integral = true;
    value = v->get<int64_t>();
  } else if (v->is_number_float()) {
    // 100.0 is an integer that went through a double (a Python writer, say).
    const double d = v->get<double>();
    integral = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
    value = static_cast<int64_t>(d);
  }
  if (!integral || value < range.min || value > range.max) {
    return Fail(key, absl::StrCat("must be ", DescribeInt(range), ", got ", Shown(*v)));
  }
  *out = value;
}

void FieldReader::ReadDouble(const char* key, double* out, DoubleRange range, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return;
  const double value = v->is_number() ? v->get<double>() : 0;
  if (!v->is_number() || !std::isfinite(value) || value < range.min || value > range.max) {
    return Fail(key, absl::StrCat("must be ", DescribeDouble(range), ", got ", Shown(*v)));
  }
  *out = value;
}

void FieldReader::ReadBool(const char* key, bool* out, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return;
  if (!v->is_boolean()) return Fail(key, absl::StrCat("must be true or false, got ", Shown(*v)));
  *out = v->get<bool>();
}

void FieldReader::Required(const char* key, std::string* out, size_t max_bytes) {
  ReadString(key, out, max_bytes, kRequired);
}
void FieldReader::Optional(const char* key, std::string* out, size_t max_bytes) {
  ReadString(key, out, max_bytes, kOptional);
}
void FieldReader::Required(const char* key, int64_t* out, IntRange range) {
  ReadInt(key, out, range, kRequired);
}
void FieldReader::Optional(const char* key, int64_t* out, IntRange range) {
  ReadInt(key, out, range, kOptional);
}
void FieldReader::Required(const char* key, int* out, IntRange range) {
  range.min = std::max<int64_t>(range.min, std::numeric_limits<int>::min());
  range.max = std::min<int64_t>(range.max, std::numeric_limits<int>::max());
  int64_t value = *out;
  ReadInt(key, &value, range, kRequired);
  *out = static_cast<int>(value);
}
void FieldReader::Optional(const char* key, int* out, IntRange range) {
  range.min = std::max<int64_t>(range.min, std::numeric_limits<int>::min());
  range.max = std::min<int64_t>(range.max, std::numeric_limits<int>::max());
  int64_t value = *out;
  ReadInt(key, &value, range, kOptional);
  *out = static_cast<int>(value);
}
void FieldReader::RequiredId(const char* key, int64_t* out) {
  int64_t id = 0;
  ReadInt(key, &id, {.min = 1}, kRequired);
  if (!ok()) return;
  if (id > kMaxId) {
    return Fail(key, absl::StrCat("must be an id in [1, ", kMaxId, "] (2^53 - 1), got ", id));
  }
  *out = id;
}
void FieldReader::Required(const char* key, double* out, DoubleRange range) {
  ReadDouble(key, out, range, kRequired);
}
void FieldReader::Optional(const char* key, double* out, DoubleRange range) {
  ReadDouble(key, out, range, kOptional);
}
void FieldReader::Optional(const char* key, std::optional<double>* out, DoubleRange range) {
  if (!Has(key)) return;
  double value = 0;
  ReadDouble(key, &value, range, kOptional);
  if (ok()) *out = value;
}
void FieldReader::Required(const char* key, bool* out) { ReadBool(key, out, kRequired); }
void FieldReader::Optional(const char* key, bool* out) { ReadBool(key, out, kOptional); }

void FieldReader::Nullable(const char* key, double* out) {
  *out = std::nan("");
  ReadDouble(key, out, {}, kOptional);
}

void FieldReader::Object(const char* key, Json* out, Need need) {
  const Json* v = Field(key, need);
  if (v == nullptr) return;
  if (!v->is_object()) return Fail(key, absl::StrCat("must be a JSON object, got ", Shown(*v)));
  *out = *v;
}

void FieldReader::Value(const char* key, Json* out, Need need) {
  const Json* v = Field(key, need);
  if (v != nullptr) *out = *v;
}

absl::StatusOr<std::string> ParseStringElement(const Json& json, const std::string& context) {
  if (!json.is_string() || json.get_ref<const std::string&>().size() > kMaxStringBytes) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": must be a string of at most ",
                                                   kMaxStringBytes, " bytes, got ", Shown(json)));
  }
  return json.get<std::string>();
}

absl::StatusOr<int64_t> ParsePositiveIntElement(const Json& json, const std::string& context) {
  if (!json.is_number_integer() || json.get<int64_t>() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": must be an integer >= 1, got ", Shown(json)));
  }
  return json.get<int64_t>();
}

}  // namespace cohort::wire::internal
