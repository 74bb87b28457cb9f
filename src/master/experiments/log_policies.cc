#include "master/experiments/log_policies.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "re2/re2.h"

namespace cohort::master {
namespace {

wire::LogPolicyAction ToWire(config::LogPolicy::Action action) {
  switch (action) {
    case config::LogPolicy::Action::kNone:
      return wire::LogPolicyAction::kNone;
    case config::LogPolicy::Action::kCancelRetries:
      return wire::LogPolicyAction::kCancelRetries;
    case config::LogPolicy::Action::kExcludeNode:
      return wire::LogPolicyAction::kExcludeNode;
  }
  return wire::LogPolicyAction::kNone;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const LogPolicyMatcher>> LogPolicyMatcher::Create(
    const std::vector<config::LogPolicy>& policies) {
  std::shared_ptr<LogPolicyMatcher> matcher(new LogPolicyMatcher());
  RE2::Options options;
  options.set_log_errors(false);
  for (size_t i = 0; i < policies.size(); ++i) {
    const config::LogPolicy& p = policies[i];
    matcher->labels_.push_back(p.name.value_or(p.pattern.value_or("")));
    matcher->actions_.push_back(ToWire(p.action));
    if (!p.pattern) continue;
    auto re = std::make_unique<RE2>(*p.pattern, options);
    if (!re->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("log_policies[", i,
                       "].pattern: not a valid regular expression (RE2 "
                       "syntax): ",
                       re->error()));
    }
    matcher->patterns_.emplace_back(static_cast<int>(i), std::move(re));
  }
  return std::shared_ptr<const LogPolicyMatcher>(std::move(matcher));
}

LogPolicyMatcher::~LogPolicyMatcher() = default;

std::vector<int> LogPolicyMatcher::Match(absl::string_view line) const {
  std::vector<int> out;
  const re2::StringPiece text(line.data(), line.size());
  for (const auto& [index, re] : patterns_) {
    if (RE2::PartialMatch(text, *re)) out.push_back(index);
  }
  return out;
}

const wire::LogPolicyMatch* CancelRetriesMatch(const std::vector<wire::LogPolicyMatch>& matches,
                                               absl::string_view allocation) {
  for (const wire::LogPolicyMatch& m : matches) {
    if (m.action == wire::LogPolicyAction::kCancelRetries && m.allocation == allocation) {
      return &m;
    }
  }
  return nullptr;
}

std::set<std::string> ExcludedAgents(const std::vector<wire::LogPolicyMatch>& matches) {
  std::set<std::string> out;
  for (const wire::LogPolicyMatch& m : matches) {
    if (m.action == wire::LogPolicyAction::kExcludeNode) out.insert(m.agent);
  }
  return out;
}

}  // namespace cohort::master
