#include <cmath>

#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"

namespace cohort::config::internal {
namespace {

const std::vector<std::string> kTypes = {"const", "int", "double", "log", "categorical"};

Hyperparameter ParseTyped(const Json& node, const std::string& path, ErrorList* errors,
                          Json* effective) {
  Hyperparameter hp;
  ObjectReader r(node, path, errors, effective);
  std::optional<std::string> type = r.String("type", std::nullopt, kTypes);
  if (!type) {
    // Unknown type: accept every typed field so only the type is reported.
    for (const char* key : {"val", "minval", "maxval", "base", "count", "vals"}) r.Get(key);
    r.Finish();
    return hp;
  }
  if (*type == "const") {
    hp.type = Hyperparameter::Type::kConst;
    if (r.Require("val")) hp.val = *r.Raw("val");
  } else if (*type == "categorical") {
    hp.type = Hyperparameter::Type::kCategorical;
    if (r.Require("vals")) {
      const Json& vals = *r.Raw("vals");
      if (!vals.is_array()) {
        errors->Add(r.PathOf("vals"), absl::StrCat("expected a list, got ", DescribeValue(vals)));
      } else if (vals.empty()) {
        errors->Add(r.PathOf("vals"), "must not be empty");
      } else {
        hp.vals.assign(vals.begin(), vals.end());
      }
    }
  } else {
    const bool is_int = *type == "int";
    hp.type = is_int                ? Hyperparameter::Type::kInt
              : *type == "double" ? Hyperparameter::Type::kDouble
                                  : Hyperparameter::Type::kLog;
    const bool has_min = r.Require("minval");
    const bool has_max = r.Require("maxval");
    std::optional<double> minval, maxval;
    if (is_int) {
      if (auto v = r.Int("minval")) minval = static_cast<double>(*v);
      if (auto v = r.Int("maxval")) maxval = static_cast<double>(*v);
    } else {
      minval = r.Number("minval");
      maxval = r.Number("maxval");
    }
    if (has_min && has_max && minval && maxval && *minval > *maxval) {
      errors->Add(r.PathOf("maxval"),
                  absl::StrCat("must be >= minval (", r.Get("minval")->dump(), "), got ",
                               r.Get("maxval")->dump()));
    }
    hp.minval = minval.value_or(0);
    hp.maxval = maxval.value_or(0);
    if (hp.type == Hyperparameter::Type::kLog) {
      hp.base = r.Number("base", 10.0, GreaterThan(0)).value_or(10.0);
    }
    hp.count = r.Int("count", std::nullopt, AtLeast(1));
  }
  r.Finish();
  return hp;
}

}  // namespace

Hyperparameters ParseHyperparameters(const Json& node, const std::string& path, ErrorList* errors,
                                     Json* effective) {
  Hyperparameters result;
  *effective = Json::object();
  if (node.is_null()) return result;
  if (!node.is_object()) {
    errors->Add(path, absl::StrCat("expected a map of hyperparameters, got ", DescribeValue(node)));
    return result;
  }
  for (const auto& [name, value] : node.items()) {
    const std::string item_path = JoinPath(path, name);
    Json& item_effective = (*effective)[name];
    if (value.is_object() && value.contains("type")) {
      result.emplace_back(name, ParseTyped(value, item_path, errors, &item_effective));
    } else if (value.is_object()) {
      Hyperparameter group;
      group.type = Hyperparameter::Type::kGroup;
      group.members = ParseHyperparameters(value, item_path, errors, &item_effective);
      result.emplace_back(name, std::move(group));
    } else {
      Hyperparameter constant;
      constant.val = value;
      item_effective = value;
      result.emplace_back(name, std::move(constant));
    }
  }
  return result;
}

}  // namespace cohort::config::internal
