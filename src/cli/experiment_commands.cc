#include "cli/experiment_commands.h"

#include <iostream>
#include <memory>

#include "cli/validate_command.h"

namespace cohort::cli {

void AddExperimentCommands(CLI::App* root, int* exit_code) {
  CLI::App* experiment = root->add_subcommand("experiment", "Manage experiments");
  experiment->alias("e");
  experiment->require_subcommand(1);

  auto validate_args = std::make_shared<ValidateArgs>();
  auto template_path = std::make_shared<std::string>();
  CLI::App* validate = experiment->add_subcommand(
      "validate",
      "Check an experiment config and print the effective config.\n"
      "Validates CONFIG (Determined's experiment YAML), merged under TEMPLATE when given, and\n"
      "prints the effective config as YAML: every default filled in and the experiment seed\n"
      "recorded. On errors prints each one as FILE: FIELD.PATH: RULE and exits 1.");
  validate->add_option("config", validate_args->config_path, "Experiment config (YAML)")
      ->required();
  validate->add_option("--template,-t", *template_path,
                       "Template file (YAML) merged under the config: config scalars win, "
                       "lists are concatenated, maps are merged");
  validate->footer(
      "Examples:\n"
      "  cohort experiment validate examples/fashion_mnist/const.yaml\n"
      "  cohort experiment validate exp.yaml --template team_defaults.yaml\n"
      "\n"
      "Exit status: 0 valid; 1 invalid config or YAML; 2 bad arguments or unreadable file.");
  validate->callback([validate_args, template_path, validate, exit_code] {
    if (validate->count("--template") > 0) validate_args->template_path = *template_path;
    *exit_code = RunValidate(*validate_args, std::cout, std::cerr);
  });
}

}  // namespace cohort::cli
