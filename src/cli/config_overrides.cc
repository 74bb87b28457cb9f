#include "cli/config_overrides.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "config/yaml_json.h"

namespace cohort::cli {
namespace {

absl::Status ApplyOne(const std::string& override_text, config::Json& tree) {
  const size_t eq = override_text.find('=');
  const std::string where = absl::StrCat("--config ", override_text);
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected KEY=VALUE, e.g. hyperparameters.lr=0.01"));
  }
  const std::vector<std::string> keys = absl::StrSplit(override_text.substr(0, eq), '.');
  absl::StatusOr<config::Json> value = config::ParseYaml(override_text.substr(eq + 1));
  if (!value.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the value is not YAML: ", value.status().message()));
  }
  config::Json* node = &tree;
  std::string path;
  for (const std::string& key : keys) {
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the key has an empty part"));
    }
    if (node->is_null()) *node = config::Json::object();
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

absl::Status ApplyConfigOverrides(const std::vector<std::string>& overrides, config::Json& tree) {
  for (const std::string& o : overrides) COHORT_RETURN_IF_ERROR(ApplyOne(o, tree));
  return absl::OkStatus();
}

void ApplySmokeTest(config::Json& tree) {
  config::Json& searcher = tree["searcher"];
  int64_t batches = kSmokeTestBatches;
  if (searcher.is_object() && searcher.contains("max_length")) {
    const config::Json& length = searcher["max_length"];
    if (length.is_object() && length.size() == 1 && length.contains("batches") &&
        length["batches"].is_number_integer() && length["batches"].get<int64_t>() > 0) {
      batches = std::min(batches, length["batches"].get<int64_t>());
    }
  }
  config::Json smoke = {{"name", "single"}};
  for (const char* kept : {"metric", "smaller_is_better"}) {
    if (searcher.is_object() && searcher.contains(kept)) smoke[kept] = searcher[kept];
  }
  smoke["max_length"] = {{"batches", batches}};
  searcher = std::move(smoke);
  tree["min_validation_period"] = {{"batches", batches}};
  tree.erase("min_checkpoint_period");
}

}  // namespace cohort::cli
