#include "config/internal/object_reader.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::config::internal {
namespace {

std::string FormatBound(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

}  // namespace

std::string BoundsViolation(double value, const Bounds& bounds) {
  std::string got = FormatBound(value);
  if (bounds.min && bounds.exclusive_min && !(value > *bounds.min)) {
    return absl::StrCat("must be > ", FormatBound(*bounds.min), ", got ", got);
  }
  if (bounds.min && !bounds.exclusive_min && !(value >= *bounds.min)) {
    return absl::StrCat("must be >= ", FormatBound(*bounds.min), ", got ", got);
  }
  if (bounds.max && !(value <= *bounds.max)) {
    return absl::StrCat("must be <= ", FormatBound(*bounds.max), ", got ", got);
  }
  return "";
}

ObjectReader::ObjectReader(const Json& node, std::string path, ErrorList* errors, Json* effective)
    : node_(node), path_(std::move(path)), errors_(errors), effective_(effective) {
  is_map_ = node_.is_object();
  if (!is_map_ && !node_.is_null()) {
    errors_->Add(path_, absl::StrCat("expected a map, got ", DescribeValue(node_)));
  }
  if (effective_ != nullptr && !effective_->is_object()) *effective_ = Json::object();
}

bool ObjectReader::Has(absl::string_view key) const {
  if (!is_map_) return false;
  auto it = node_.find(std::string(key));
  return it != node_.end() && !it->is_null();
}

const Json* ObjectReader::Get(absl::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  if (!Has(key)) return nullptr;
  return &node_.at(std::string(key));
}

bool ObjectReader::Require(absl::string_view key) {
  if (Has(key)) return true;
  Error(key, "required field is missing");
  return false;
}

void ObjectReader::Error(absl::string_view key, absl::string_view message) {
  errors_->Add(PathOf(key), message);
}

bool ObjectReader::CheckBounds(absl::string_view key, double value, const Bounds& bounds) {
  std::string violation = BoundsViolation(value, bounds);
  if (violation.empty()) return true;
  Error(key, violation);
  return false;
}

void ObjectReader::Set(absl::string_view key, Json value) {
  if (effective_ != nullptr) (*effective_)[std::string(key)] = std::move(value);
}

std::optional<int64_t> ObjectReader::Int(absl::string_view key, std::optional<int64_t> fallback,
                                         Bounds bounds) {
  const Json* value = Get(key);
  std::optional<int64_t> result = fallback;
  if (value != nullptr) {
    if (!value->is_number_integer()) {
      Error(key, absl::StrCat("expected an integer, got ", DescribeValue(*value)));
    } else if (CheckBounds(key, static_cast<double>(value->get<int64_t>()), bounds)) {
      result = value->get<int64_t>();
    }
  }
  if (result) Set(key, *result);
  return result;
}

std::optional<double> ObjectReader::Number(absl::string_view key, std::optional<double> fallback,
                                           Bounds bounds) {
  const Json* value = Get(key);
  std::optional<double> result = fallback;
  if (value != nullptr) {
    if (!value->is_number()) {
      Error(key, absl::StrCat("expected a number, got ", DescribeValue(*value)));
    } else if (CheckBounds(key, value->get<double>(), bounds)) {
      result = value->get<double>();
      Set(key, *value);  // keeps 3 as 3 and 0.5 as 0.5
      return result;
    }
  }
  if (result) Set(key, *result);
  return result;
}

std::optional<bool> ObjectReader::Bool(absl::string_view key, std::optional<bool> fallback) {
  const Json* value = Get(key);
  std::optional<bool> result = fallback;
  if (value != nullptr) {
    if (!value->is_boolean()) {
      Error(key, absl::StrCat("expected a boolean (true or false), got ", DescribeValue(*value)));
    } else {
      result = value->get<bool>();
    }
  }
  if (result) Set(key, *result);
  return result;
}

std::optional<std::string> ObjectReader::String(absl::string_view key,
                                                std::optional<std::string> fallback,
                                                const std::vector<std::string>& allowed) {
  const Json* value = Get(key);
  std::optional<std::string> result = fallback;
  if (value != nullptr) {
    if (!value->is_string()) {
      Error(key, absl::StrCat("expected a string, got ", DescribeValue(*value)));
    } else {
      const std::string& s = value->get_ref<const std::string&>();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
        std::string message =
            absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "), ", got '", s, "'");
        std::string suggestion = SuggestClosest(s, allowed);
        if (!suggestion.empty()) absl::StrAppend(&message, "; did you mean ", suggestion, "?");
        Error(key, message);
        return fallback;
      }
      result = s;
    }
  }
  if (result) Set(key, *result);
  return result;
}

std::optional<std::vector<std::string>> ObjectReader::StringList(absl::string_view key) {
  const Json* value = Get(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_array()) {
    Error(key, absl::StrCat("expected a list of strings, got ", DescribeValue(*value)));
    return std::nullopt;
  }
  std::vector<std::string> result;
  bool ok = true;
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& item = (*value)[i];
    if (!item.is_string()) {
      errors_->Add(absl::StrCat(PathOf(key), "[", i, "]"),
                   absl::StrCat("expected a string, got ", DescribeValue(item)));
      ok = false;
      continue;
    }
    result.push_back(item.get<std::string>());
  }
  if (!ok) return std::nullopt;
  Set(key, *value);
  return result;
}

std::optional<std::vector<int64_t>> ObjectReader::IntList(absl::string_view key, Bounds bounds) {
  const Json* value = Get(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_array()) {
    Error(key, absl::StrCat("expected a list of integers, got ", DescribeValue(*value)));
    return std::nullopt;
  }
  std::vector<int64_t> result;
  bool ok = true;
  for (size_t i = 0; i < value->size(); ++i) {
    const Json& item = (*value)[i];
    const std::string item_path = absl::StrCat(PathOf(key), "[", i, "]");
    if (!item.is_number_integer()) {
      errors_->Add(item_path, absl::StrCat("expected an integer, got ", DescribeValue(item)));
      ok = false;
      continue;
    }
    std::string violation = BoundsViolation(static_cast<double>(item.get<int64_t>()), bounds);
    if (!violation.empty()) {
      errors_->Add(item_path, violation);
      ok = false;
      continue;
    }
    result.push_back(item.get<int64_t>());
  }
  if (!ok) return std::nullopt;
  Set(key, *value);
  return result;
}

const Json* ObjectReader::Map(absl::string_view key) {
  const Json* value = Get(key);
  if (value == nullptr) return nullptr;
  if (!value->is_object()) {
    Error(key, absl::StrCat("expected a map, got ", DescribeValue(*value)));
    return nullptr;
  }
  Set(key, *value);
  return value;
}

void ObjectReader::Warn(absl::string_view key, absl::string_view why, const Json& unless) {
  if (!Has(key)) return;
  const Json& value = node_.at(std::string(key));
  const bool asks_nothing = (value.is_boolean() && !value.get<bool>()) ||
                            (value.is_string() && value.get_ref<const std::string&>().empty()) ||
                            (value.is_array() && value.empty()) ||
                            (value.is_object() && value.empty());
  if (asks_nothing || (!unless.is_null() && value == unless)) return;
  errors_->AddWarning(PathOf(key), absl::StrCat("ignored: ", why));
}

const Json* ObjectReader::Raw(absl::string_view key) {
  const Json* value = Get(key);
  if (value != nullptr) Set(key, *value);
  return value;
}

void ObjectReader::Finish() {
  if (!is_map_) return;
  for (const auto& [key, value] : node_.items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string message = "unknown field";
    std::string suggestion = SuggestClosest(key, known_);
    if (!suggestion.empty()) {
      absl::StrAppend(&message, "; did you mean ", suggestion, "?");
    } else {
      absl::StrAppend(&message, " (known fields: ", absl::StrJoin(known_, ", "), ")");
    }
    Error(key, message);
  }
}

}  // namespace cohort::config::internal
