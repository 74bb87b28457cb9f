#include "master/templates/templates.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "config/error_list.h"
#include "config/secrets.h"
#include "config/template_merge.h"
#include "config/yaml_json.h"
#include "wire/limits.h"

namespace cohort::master::templates {

absl::Status ConfigError(const absl::Status& status, const std::string& what) {
  std::vector<std::string> lines = config::ConfigErrors(status);
  if (lines.empty()) lines.push_back(std::string(status.message()));
  return absl::InvalidArgumentError(absl::StrCat(what, ":\n", absl::StrJoin(lines, "\n")));
}

namespace {

wire::Template Shown(const TemplateRow& row, bool reveal_secrets) {
  return wire::Template{row.name, reveal_secrets ? row.yaml : config::MaskSecretsInYaml(row.yaml)};
}

}  // namespace

absl::StatusOr<wire::TemplateList> Templates::List(bool reveal_secrets) {
  COHORT_ASSIGN_OR_RETURN(std::vector<TemplateRow> rows, db_.ListTemplates());
  wire::TemplateList out;
  for (const TemplateRow& row : rows) out.templates.push_back(Shown(row, reveal_secrets));
  return out;
}

absl::StatusOr<wire::Template> Templates::Get(const std::string& name, bool reveal_secrets) {
  COHORT_ASSIGN_OR_RETURN(TemplateRow row, db_.GetTemplate(name));
  return Shown(row, reveal_secrets);
}

absl::Status Templates::Put(const std::string& name, const std::string& yaml) {
  // The name is a path segment (/api/v1/templates/{name}) and a config's `template:` value.
  COHORT_RETURN_IF_ERROR(wire::CheckSafeName("template name", name));
  absl::StatusOr<config::Json> tree = config::ParseYaml(yaml);
  if (!tree.ok()) return ConfigError(tree.status(), "template " + name + " is not valid YAML");
  // A map that does not itself name a template, whose fields are what a config's may be.
  absl::Status checked = config::CheckTemplate(*tree);
  if (!checked.ok()) {
    return ConfigError(checked, "template " + name + " is not a valid config part");
  }
  return db_.PutTemplate({name, yaml});
}

absl::Status Templates::Delete(const std::string& name) { return db_.DeleteTemplate(name); }

absl::StatusOr<Merged> Templates::Merge(nlohmann::json tree, const std::string& name) {
  Merged out;
  out.template_name = name;
  if (out.template_name.empty() && tree.is_object() && tree.contains("template") &&
      tree["template"].is_string()) {
    out.template_name = tree["template"].get<std::string>();
  }
  config::Json tmpl;
  if (!out.template_name.empty()) {
    COHORT_RETURN_IF_ERROR(wire::CheckSafeName("template", out.template_name));
    absl::StatusOr<TemplateRow> row = db_.GetTemplate(out.template_name);
    if (!row.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("template '", out.template_name,
                                                     "' does not exist (`cohort template list` "
                                                     "shows them)"));
    }
    absl::StatusOr<config::Json> parsed = config::ParseYaml(row->yaml);
    if (!parsed.ok()) return ConfigError(parsed.status(), "template " + out.template_name);
    tmpl = *std::move(parsed);
  }
  if (tree.is_object()) tree.erase("template");
  absl::StatusOr<config::Json> merged = config::MergeTemplate(tmpl, tree);
  if (!merged.ok()) return ConfigError(merged.status(), "merging the template");
  out.tree = *std::move(merged);
  return out;
}

}  // namespace cohort::master::templates
