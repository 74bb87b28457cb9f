#include "config/template_merge.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "config/config_parser.h"
#include "config/error_list.h"

namespace cohort::config {
namespace {

// Lists whose items are keyed by container_path: a config item replaces the template's.
bool IsMountList(const std::string& path) {
  return path == "bind_mounts" || path == "resources.devices";
}

std::string ContainerPath(const Json& item) {
  if (item.is_object()) {
    auto it = item.find("container_path");
    if (it != item.end() && it->is_string()) return it->get<std::string>();
  }
  // Device short form "host:container[:mode]".
  if (item.is_string()) {
    const std::string& s = item.get_ref<const std::string&>();
    const size_t a = s.find(':');
    if (a != std::string::npos) return s.substr(a + 1, s.find(':', a + 1) - a - 1);
  }
  return "";
}

// The tag that selects a variant of the map at `path`, if that map is a tagged union.
const Json* UnionTag(const Json& map, const std::string& path) {
  const char* key = nullptr;
  if (path == "searcher") {
    key = "name";
  } else if (path == "checkpoint_storage" || path == "data_layer" ||
             path == "tensorboard_storage") {
    key = "type";
  } else {
    return nullptr;
  }
  auto it = map.find(key);
  return it == map.end() ? nullptr : &*it;
}

// environment.image (a name) and environment.environment_variables (a list) have a map form,
// {cpu, cuda, rocm}; Determined reads the short form as the same value for every accelerator.
bool HasAcceleratorMap(const std::string& path) {
  return path == "environment.image" || path == "environment.environment_variables";
}

Json AcceleratorMap(const Json& value) {
  if (value.is_object()) return value;
  return Json{{"cpu", value}, {"cuda", value}, {"rocm", value}};
}

// A hyperparameter with a `type` (or a constant) is atomic: the config's replaces the
// template's. Only nested groups (maps without `type`) merge, recursively.
bool IsAtomicHyperparameter(const Json& tmpl, const Json& config, const std::string& path) {
  if (path.rfind("hyperparameters.", 0) != 0) return false;
  auto typed = [](const Json& v) { return !v.is_object() || v.contains("type"); };
  return typed(tmpl) || typed(config);
}

// As Determined merges log policies: the config's, then the template's whose name the config
// does not use (a policy without a name: unless the config has the same one).
Json MergeLogPolicies(const Json& tmpl, const Json& config) {
  Json merged = config;
  std::set<std::string> names;
  for (const Json& item : config) {
    if (item.is_object() && item.contains("name") && item["name"].is_string()) {
      names.insert(item["name"].get<std::string>());
    }
  }
  for (const Json& item : tmpl) {
    const bool named = item.is_object() && item.contains("name") && item["name"].is_string();
    if (named ? names.count(item["name"].get<std::string>()) == 0
              : std::find(config.begin(), config.end(), item) == config.end()) {
      merged.push_back(item);
    }
  }
  return merged;
}

Json Merge(const Json& tmpl, const Json& config, const std::string& path) {
  if (config.is_null()) return tmpl;
  if (IsAtomicHyperparameter(tmpl, config, path)) return config;
  if (HasAcceleratorMap(path) && !tmpl.is_null() && tmpl.is_object() != config.is_object()) {
    // One side uses the short form, the other the map: merge them as maps.
    return Merge(AcceleratorMap(tmpl), AcceleratorMap(config), path);
  }
  if (tmpl.is_object() && config.is_object()) {
    const Json* tmpl_tag = UnionTag(tmpl, path);
    const Json* config_tag = UnionTag(config, path);
    if (tmpl_tag != nullptr && config_tag != nullptr && *tmpl_tag != *config_tag) return config;
    Json merged = tmpl;
    for (const auto& [key, value] : config.items()) {
      auto it = merged.find(key);
      merged[key] = it == merged.end() ? value : Merge(*it, value, JoinPath(path, key));
    }
    return merged;
  }
  if (tmpl.is_array() && config.is_array() && IsMountList(path)) {
    // As Determined merges them: the config's mounts, then the template's at other paths.
    Json merged = config;
    std::set<std::string> used;
    for (const Json& item : config) used.insert(ContainerPath(item));
    for (const Json& item : tmpl) {
      const std::string container = ContainerPath(item);
      if (container.empty() || used.count(container) == 0) merged.push_back(item);
    }
    return merged;
  }
  if (tmpl.is_array() && config.is_array() && path == "log_policies")
    return MergeLogPolicies(tmpl, config);
  if (tmpl.is_array() && config.is_array()) {
    Json merged = tmpl;
    for (const Json& item : config) merged.push_back(item);
    return merged;
  }
  return config;
}

}  // namespace

absl::StatusOr<Json> MergeTemplate(const Json& tmpl, const Json& config) {
  ErrorList errors;
  if (tmpl.is_null()) return config;
  if (!tmpl.is_object()) {
    errors.Add("template", absl::StrCat("expected a map, got ", DescribeValue(tmpl)));
  } else if (tmpl.contains("template")) {
    errors.Add("template.template", "a template cannot itself name a template");
  }
  if (!errors.empty()) return errors.ToStatus();
  if (!config.is_object()) return config;  // ParseExperimentConfig reports it.
  return Merge(tmpl, config, "");
}

absl::Status CheckTemplate(const Json& tmpl) {
  COHORT_RETURN_IF_ERROR(MergeTemplate(tmpl, Json::object()).status());
  if (tmpl.is_null()) return absl::OkStatus();
  // A fixed seed: a template's check must not draw from std::random_device for nothing.
  absl::Status parsed = ParseExperimentConfig(tmpl, {.seed_if_absent = 0}).status();
  ErrorList errors;
  for (const std::string& line : ConfigErrors(parsed)) {
    // What the config can still settle (ObjectReader::Require's and the searcher's metric's
    // message; CheckCrossFieldRules' epochs rule).
    if (absl::StrContains(line, ": required field is missing")) continue;
    if (absl::StrContains(line, "needs records_per_epoch")) continue;
    errors.Add("", line);
  }
  return errors.ToStatus();
}

}  // namespace cohort::config
