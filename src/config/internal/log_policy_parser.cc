// `log_policies`: a list of {name, pattern, action}. Read in Determined's current form
//   - {name: CUDA OOM, pattern: ".*CUDA out of memory.*", action: cancel_retries}
// (action also {signal: NAME}, a label only) and its legacy form, which it still accepts:
//   - {pattern: ".*ECC.*", action: {type: exclude_node}}
// Both become the same LogPolicy. As Determined does, Determined's two default policies ("CUDA
// OOM", "ECC Error") are added unless the list names them (a named policy without a pattern
// turns a default off); names must be unique; a policy without a name (the legacy form) needs a
// pattern and an action. Patterns are RE2 (Go's regexp syntax, which Determined uses), checked
// here so a bad one is an error at its path. Acting on a match is the master's job
// (master/experiments/log_policies.h).

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"
#include "config/limits.h"
#include "re2/re2.h"

namespace cohort::config::internal {
namespace {

const std::vector<std::string> kActions = {"cancel_retries", "exclude_node"};

LogPolicy::Action ToAction(const std::string& name) {
  return name == "cancel_retries" ? LogPolicy::Action::kCancelRetries
                                  : LogPolicy::Action::kExcludeNode;
}

// action: cancel_retries | exclude_node | {type: cancel_retries | exclude_node} | {signal: S}.
void ReadAction(ObjectReader& r, LogPolicy& policy, ErrorList* errors, Json* effective) {
  const Json* action = r.Get("action");
  if (action == nullptr) return;
  if (action->is_string()) {
    if (auto name = r.String("action", std::nullopt, kActions)) policy.action = ToAction(*name);
    return;
  }
  if (!action->is_object()) {
    errors->Add(r.PathOf("action"),
                absl::StrCat("expected cancel_retries, exclude_node, {type: ...} or {signal: "
                             "...}, got ",
                             DescribeValue(*action)));
    return;
  }
  ObjectReader a(*action, r.PathOf("action"), errors, &(*effective)["action"]);
  if (a.Has("signal")) {
    policy.signal = a.String("signal");
  } else {
    a.Require("type");
    if (auto type = a.String("type", std::nullopt, kActions)) policy.action = ToAction(*type);
  }
  a.Finish();
}

// The pattern must compile as RE2 (Go's regexp syntax): the master matches log lines with it.
void CheckPattern(const ObjectReader& r, const LogPolicy& policy, ErrorList* errors) {
  if (!policy.pattern || policy.pattern->size() > kMaxLogPatternBytes) return;
  RE2::Options options;
  options.set_log_errors(false);
  RE2 re(*policy.pattern, options);
  if (!re.ok()) {
    errors->Add(r.PathOf("pattern"),
                absl::StrCat("not a valid regular expression (RE2 syntax): ", re.error()));
  }
}

LogPolicy ReadPolicy(const Json& node, const std::string& path, ErrorList* errors,
                     Json* effective) {
  LogPolicy policy;
  ObjectReader r(node, path, errors, effective);
  policy.name = r.String("name");
  policy.pattern = r.String("pattern");
  if (policy.pattern && policy.pattern->size() > kMaxLogPatternBytes) {
    errors->Add(r.PathOf("pattern"), absl::StrCat("must be at most ", kMaxLogPatternBytes,
                                                  " bytes, got ", policy.pattern->size()));
  }
  if (policy.name && policy.name->size() > kMaxNameBytes) {
    errors->Add(r.PathOf("name"), absl::StrCat("must be at most ", kMaxNameBytes, " bytes, got ",
                                               policy.name->size()));
  }
  CheckPattern(r, policy, errors);
  ReadAction(r, policy, errors, effective);
  if (!policy.name && !policy.pattern && r.is_map()) {
    errors->Add(path, "needs a name or a pattern");
  } else if (!policy.name && r.is_map() && policy.action == LogPolicy::Action::kNone &&
             !policy.signal && !r.Has("action")) {
    errors->Add(path, "a policy without a name (the legacy form) needs an action");
  }
  r.Finish();
  return policy;
}

// Determined's defaults: the two GPU failures it recognizes, labelled, with no action.
std::vector<LogPolicy> DefaultPolicies() {
  return {{"CUDA OOM", ".*CUDA out of memory.*", LogPolicy::Action::kNone, std::nullopt},
          {"ECC Error", ".*uncorrectable ECC error encountered.*", LogPolicy::Action::kNone,
           std::nullopt}};
}

Json PolicyJson(const LogPolicy& p) {
  Json out = Json::object();
  if (p.name) out["name"] = *p.name;
  if (p.pattern) out["pattern"] = *p.pattern;
  if (p.action != LogPolicy::Action::kNone) {
    out["action"] =
        p.action == LogPolicy::Action::kCancelRetries ? "cancel_retries" : "exclude_node";
  }
  return out;
}

// Names must be unique: "log_policies[2].name: duplicate name 'OOM' (also log_policies[0])".
void CheckUniqueNames(const std::vector<LogPolicy>& policies, ErrorList* errors) {
  absl::flat_hash_map<std::string, size_t> first;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (!policies[i].name) continue;
    auto [it, inserted] = first.emplace(*policies[i].name, i);
    if (!inserted) {
      errors->Add(absl::StrCat("log_policies[", i, "].name"),
                  absl::StrCat("duplicate name '", *policies[i].name, "' (also log_policies[",
                               it->second, "])"));
    }
  }
}

// Adds the defaults the list does not name, to `policies` and the effective list.
void AddDefaults(std::vector<LogPolicy>& policies, Json* effective) {
  if (!effective->is_array()) *effective = Json::array();
  for (LogPolicy& d : DefaultPolicies()) {
    bool named = false;
    for (const LogPolicy& p : policies) named = named || p.name == d.name;
    if (named) continue;
    effective->push_back(PolicyJson(d));
    policies.push_back(std::move(d));
  }
}

}  // namespace

std::vector<LogPolicy> ParseLogPolicies(ObjectReader& root, ErrorList* errors, Json* effective) {
  std::vector<LogPolicy> policies;
  const Json* list = root.Get("log_policies");
  if (list != nullptr && list->is_array() && list->size() > kMaxLogPolicies) {
    errors->Add("log_policies", absl::StrCat("must have at most ", kMaxLogPolicies,
                                             " policies, got ", list->size()));
    return policies;
  }
  root.ForEachItem("log_policies", [&](const Json& item, const std::string& path, Json* out) {
    policies.push_back(ReadPolicy(item, path, errors, out));
  });
  CheckUniqueNames(policies, errors);
  AddDefaults(policies, &(*effective)["log_policies"]);
  return policies;
}

}  // namespace cohort::config::internal
