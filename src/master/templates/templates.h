#pragma once
// Templates: named config fragments an experiment's config is merged under (Determined's
// `det template`; docs/design/0003-experiment-config.md). It owns the template rows and the
// rules for them: a name is a safe path segment, a template is a YAML map that does not itself
// name a template, and a viewer who is not an admin sees a template's secrets masked
// (config/secrets.h).
//
// Thread-safe: it keeps no state of its own beyond the rows (the Database is thread-safe), so
// it takes no lock; the master's lock is never needed to call it.
//
// Example:
//   templates::Templates templates(db);
//   COHORT_RETURN_IF_ERROR(templates.Put("gpu", "resources:\n  slots_per_trial: 8\n"));
//   COHORT_ASSIGN_OR_RETURN(templates::Merged m, templates.Merge(*tree, ""));

#include <string>

#include "absl/status/statusor.h"
#include "master/db/database.h"
#include "nlohmann/json.hpp"
#include "wire/experiment_bodies.h"

namespace cohort::master::templates {

// A submitted config tree merged under its template.
struct Merged {
  nlohmann::json tree;        // the template's values, overridden by the config's
  std::string template_name;  // the template used; empty for none
};

class Templates {
 public:
  explicit Templates(Database& db) : db_(db) {}

  // Every template, by name; `reveal_secrets` false masks their secrets (non-admin viewers).
  absl::StatusOr<wire::TemplateList> List(bool reveal_secrets);
  // NotFound naming it for an unknown name.
  absl::StatusOr<wire::Template> Get(const std::string& name, bool reveal_secrets);
  // Inserts or replaces. InvalidArgument naming the template: an unsafe name, YAML that does
  // not parse, a document that is not a map or names a template itself, or fields a config
  // may not have (config::CheckTemplate: `experiment validate`'s errors, less the required
  // fields a template may leave to the config); every error, one per line.
  absl::Status Put(const std::string& name, const std::string& yaml);
  // NotFound for an unknown name.
  absl::Status Delete(const std::string& name);

  // `tree` (a parsed config) merged under the template named `name`, or, when `name` is empty,
  // under the one its `template:` field names (the field itself is dropped); unchanged when
  // neither names one. InvalidArgument naming the template when it does not exist (and how to
  // list them) or cannot be merged.
  absl::StatusOr<Merged> Merge(nlohmann::json tree, const std::string& name);

 private:
  Database& db_;
};

// `status`'s config errors as one InvalidArgument, `what` first and one error per line.
absl::Status ConfigError(const absl::Status& status, const std::string& what);

}  // namespace cohort::master::templates
