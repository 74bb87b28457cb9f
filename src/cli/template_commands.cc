#include "cli/template_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "config/yaml_json.h"
#include "wire/experiment_bodies.h"

namespace cohort::cli {
namespace {

std::string TemplatePath(const std::string& name) {
  return absl::StrCat("/api/v1/templates/", name);
}

int ListTemplates(const CommandContext& context, bool details) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::TemplateList> list =
      GetAs(client, "/api/v1/templates", wire::ParseTemplateList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  if (details) {
    for (const wire::Template& t : list->templates) {
      std::cout << "--- " << t.name << "\n" << t.config << "\n";
    }
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const wire::Template& t : list->templates) rows.push_back({t.name});
  PrintTable(std::cout, {"name"}, rows);
  return kExitOk;
}

int SetTemplate(const CommandContext& context, const std::string& name, const std::string& file) {
  absl::StatusOr<std::string> text = config::ReadYamlText(file);
  if (!text.ok()) return FailReading(text.status(), "the template");
  absl::StatusOr<Json> r = context.Client().Put(TemplatePath(name), *text, "application/yaml");
  if (!r.ok()) return Fail(r.status());
  std::cout << "template " << name << " set\n";
  return kExitOk;
}

int DescribeTemplate(const CommandContext& context, const std::string& name) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::Template> t = GetAs(client, TemplatePath(name), wire::ParseTemplate);
  if (!t.ok()) return Fail(t.status());
  if (context.json()) return PrintJson(t->ToJson());
  std::cout << t->config;
  return kExitOk;
}

int RemoveTemplate(const CommandContext& context, const std::string& name) {
  absl::StatusOr<Json> r = context.Client().Delete(TemplatePath(name));
  if (!r.ok()) return Fail(r.status());
  std::cout << "template " << name << " removed\n";
  return kExitOk;
}

}  // namespace

void AddTemplateCommands(CLI::App* root, CommandContext* context) {
  CLI::App* tpl = root->add_subcommand("template", "Configuration templates");
  tpl->alias("tpl");
  tpl->require_subcommand(1);

  auto details = std::make_shared<bool>(false);
  CLI::App* list = tpl->add_subcommand("list", "List templates");
  list->alias("ls");
  list->add_flag("-d,--details", *details, "Show each template's config");
  context->AddJsonFlag(list);
  context->OnRun(list, [context, details] { return ListTemplates(*context, *details); });

  auto name = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>();
  CLI::App* set = tpl->add_subcommand("set", "Create or replace a template from a YAML file");
  set->add_option("name", *name, "Template name")->required();
  set->add_option("file", *file, "Template file (YAML)")->required()->check(CLI::ExistingFile);
  set->footer(
      "Example:\n  cohort template set team team.yaml\n"
      "  cohort experiment create --template team exp.yaml CONTEXT_DIR");
  context->OnRun(set, [context, name, file] { return SetTemplate(*context, *name, *file); });

  CLI::App* describe = tpl->add_subcommand("describe", "Print a template");
  describe->add_option("name", *name, "Template name")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, name] { return DescribeTemplate(*context, *name); });

  CLI::App* remove = tpl->add_subcommand("remove", "Delete a template");
  remove->alias("rm");
  remove->add_option("name", *name, "Template name")->required();
  context->OnRun(remove, [context, name] { return RemoveTemplate(*context, *name); });
}

}  // namespace cohort::cli
