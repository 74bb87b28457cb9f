#include "cli/validate_command.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/exit_codes.h"
#include "config/config_parser.h"
#include "config/error_list.h"
#include "config/template_merge.h"
#include "config/yaml_json.h"

namespace cohort::cli {
namespace {

using config::Json;

// Prints each error of `status` prefixed by `file`; returns the exit status it deserves.
int Report(const absl::Status& status, const std::string& file, std::ostream& err) {
  if (absl::IsNotFound(status) || absl::IsPermissionDenied(status)) {
    err << "cohort: error: " << status.message() << "\n";
    return kExitUsage;
  }
  for (const std::string& line : config::ConfigErrors(status)) {
    err << file << ": " << line << "\n";
  }
  return kExitInvalid;
}

}  // namespace

int RunValidate(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  Json tmpl;
  if (args.template_path.has_value()) {
    absl::StatusOr<Json> loaded = config::LoadYamlFile(*args.template_path);
    if (!loaded.ok()) return Report(loaded.status(), *args.template_path, err);
    tmpl = *std::move(loaded);
  }
  absl::StatusOr<Json> tree = config::LoadYamlFile(args.config_path);
  if (!tree.ok()) return Report(tree.status(), args.config_path, err);

  absl::StatusOr<Json> merged = config::MergeTemplate(tmpl, *tree);
  if (!merged.ok()) return Report(merged.status(), args.template_path.value_or(""), err);

  absl::StatusOr<config::ExperimentConfig> parsed = config::ParseExperimentConfig(*merged);
  if (!parsed.ok()) return Report(parsed.status(), args.config_path, err);
  out << config::ToYaml(parsed->effective);
  return kExitOk;
}

}  // namespace cohort::cli
