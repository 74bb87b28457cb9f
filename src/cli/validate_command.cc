#include "cli/validate_command.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "cli/config_overrides.h"
#include "cli/exit_codes.h"
#include "config/config_parser.h"
#include "config/error_list.h"
#include "config/template_merge.h"
#include "config/yaml_json.h"

namespace cohort::cli {
namespace {

using config::Json;

// Prints each error of `status` (a config's: InvalidArgument, one per line) prefixed by
// `file`; returns kExitInvalid.
int Report(const absl::Status& status, const std::string& file, std::ostream& err) {
  for (const std::string& line : config::ConfigErrors(status)) {
    err << file << ": " << line << "\n";
  }
  return kExitInvalid;
}

// Determined's "eventually required" fields: a config without them is incomplete rather than
// wrong, and a template may complete it. Says so once, after the errors, when no template was
// given and some error is such a missing field.
void SayIfIncomplete(const absl::Status& status, const ValidateArgs& args, std::ostream& err) {
  if (args.template_path.has_value()) return;
  int missing = 0;
  for (const std::string& line : config::ConfigErrors(status)) {
    if (absl::StrContains(line, ": required field is missing")) ++missing;
  }
  if (missing == 0) return;
  err << args.config_path << ": incomplete: " << missing << " required field"
      << (missing == 1 ? " is" : "s are")
      << " missing; a template may provide them (cohort experiment validate " << args.config_path
      << " --template TEMPLATE.yaml; cohort experiment create --template "
      << "NAME)\n";
}

// Reads and parses a YAML file: a file that cannot be taken is named in one line (missing or
// unreadable: a usage error, as a bad argument; a directory or too long: invalid); the YAML's
// errors are listed under its path.
std::optional<Json> LoadYaml(const std::string& path, std::ostream& err, int* exit_code) {
  absl::StatusOr<std::string> text = config::ReadYamlText(path);
  if (!text.ok()) {
    *exit_code = FailReading(text.status(), "", err);
    return std::nullopt;
  }
  absl::StatusOr<Json> tree = config::ParseYaml(*text);
  if (!tree.ok()) {
    *exit_code = Report(tree.status(), path, err);
    return std::nullopt;
  }
  return *std::move(tree);
}

}  // namespace

std::optional<config::ExperimentConfig> LoadExperimentConfig(const ValidateArgs& args,
                                                             std::ostream& err, int* exit_code) {
  Json tmpl;
  if (args.template_path.has_value()) {
    std::optional<Json> loaded = LoadYaml(*args.template_path, err, exit_code);
    if (!loaded.has_value()) return std::nullopt;
    tmpl = *std::move(loaded);
  }
  std::optional<Json> tree = LoadYaml(args.config_path, err, exit_code);
  if (!tree.has_value()) return std::nullopt;
  if (absl::Status set = ApplyConfigOverrides(args.overrides, *tree); !set.ok()) {
    err << "cohort: error: " << set.message() << "\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  absl::StatusOr<Json> merged = config::MergeTemplate(tmpl, *tree);
  if (!merged.ok()) {
    *exit_code = Report(merged.status(), args.template_path.value_or(""), err);
    return std::nullopt;
  }
  absl::StatusOr<config::ExperimentConfig> parsed = config::ParseExperimentConfig(*merged);
  if (!parsed.ok()) {
    *exit_code = Report(parsed.status(), args.config_path, err);
    SayIfIncomplete(parsed.status(), args, err);
    return std::nullopt;
  }
  for (const std::string& warning : parsed->warnings) {
    err << args.config_path << ": warning: " << warning << "\n";
  }
  *exit_code = kExitOk;
  return *std::move(parsed);
}

int RunValidate(const ValidateArgs& args, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  std::optional<config::ExperimentConfig> parsed = LoadExperimentConfig(args, err, &exit_code);
  if (parsed) out << config::ToYaml(parsed->effective);
  return exit_code;
}

}  // namespace cohort::cli
