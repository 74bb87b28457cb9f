#include "cli/config_overrides.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "config/yaml_json.h"

namespace cohort::cli {
namespace {

absl::Status ApplyOne(const std::string& override_text, nlohmann::json& tree) {
  const size_t eq = override_text.find('=');
  const std::string where = absl::StrCat("--config ", override_text);
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected KEY=VALUE, e.g. hyperparameters.lr=0.01"));
  }
  const std::vector<std::string> keys = absl::StrSplit(override_text.substr(0, eq), '.');
  absl::StatusOr<nlohmann::json> value = config::ParseYaml(override_text.substr(eq + 1));
  if (!value.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the value is not YAML: ", value.status().message()));
  }
  nlohmann::json* node = &tree;
  std::string path;
  for (const std::string& key : keys) {
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the key has an empty part"));
    }
    if (node->is_null()) *node = nlohmann::json::object();
    if (!node->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", path, " is ", config::DescribeValue(*node), ", not a mapping"));
    }
    absl::StrAppend(&path, path.empty() ? "" : ".", key);
    node = &(*node)[key];
  }
  *node = *std::move(value);
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyConfigOverrides(const std::vector<std::string>& overrides, nlohmann::json& tree) {
  for (const std::string& o : overrides) COHORT_RETURN_IF_ERROR(ApplyOne(o, tree));
  return absl::OkStatus();
}

}  // namespace cohort::cli
