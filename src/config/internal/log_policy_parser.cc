// `log_policies`: a list of {name, pattern, action}. Read in Determined's current form
//   - {name: CUDA OOM, pattern: ".*CUDA out of memory.*", action: cancel_retries}
// (action also {signal: NAME}, a label only) and its legacy form, which it still accepts:
//   - {pattern: ".*ECC.*", action: {type: exclude_node}}
// Both become the same LogPolicy. Acting on a match is the master's job (not done yet).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"
#include "config/limits.h"

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
  ReadAction(r, policy, errors, effective);
  if (!policy.name && !policy.pattern && r.is_map()) {
    errors->Add(path, "needs a name or a pattern");
  }
  r.Finish();
  return policy;
}

// Determined's defaults: the two GPU failures it recognizes, labelled, with no action.
std::vector<LogPolicy> DefaultPolicies(Json* effective) {
  std::vector<LogPolicy> policies = {
      {"CUDA OOM", ".*CUDA out of memory.*", LogPolicy::Action::kNone, std::nullopt},
      {"ECC Error", ".*uncorrectable ECC error encountered.*", LogPolicy::Action::kNone,
       std::nullopt}};
  *effective = Json::array();
  for (const LogPolicy& p : policies) {
    effective->push_back(Json{{"name", *p.name}, {"pattern", *p.pattern}});
  }
  return policies;
}

}  // namespace

std::vector<LogPolicy> ParseLogPolicies(ObjectReader& root, ErrorList* errors, Json* effective) {
  if (!root.Has("log_policies")) {
    root.Get("log_policies");
    return DefaultPolicies(&(*effective)["log_policies"]);
  }
  std::vector<LogPolicy> policies;
  const Json* list = root.Get("log_policies");
  if (list->is_array() && list->size() > kMaxLogPolicies) {
    errors->Add("log_policies", absl::StrCat("must have at most ", kMaxLogPolicies,
                                             " policies, got ", list->size()));
    return policies;
  }
  const size_t errors_before = errors->errors().size();
  root.ForEachItem("log_policies", [&](const Json& item, const std::string& path, Json* out) {
    policies.push_back(ReadPolicy(item, path, errors, out));
  });
  if (errors->errors().size() == errors_before) {
    root.Warn("log_policies", "Cohort does not act on log policies yet");
  }
  return policies;
}

}  // namespace cohort::config::internal
