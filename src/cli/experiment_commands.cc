#include "cli/experiment_commands.h"

#include <iostream>
#include <memory>

#include "cli/cluster_commands.h"
#include "cli/exit_codes.h"
#include "cli/local_experiment.h"
#include "cli/validate_command.h"

namespace cohort::cli {

CLI::App* AddExperimentCommands(CLI::App* root, const std::string* master_flag, int* exit_code) {
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

  auto create_args = std::make_shared<CreateLocalArgs>();
  auto create_template = std::make_shared<std::string>();
  auto local = std::make_shared<bool>(false);
  CLI::App* create = experiment->add_subcommand(
      "create",
      "Create an experiment from CONFIG and the trial program in CONTEXT_DIR.\n"
      "With --local it runs here, without a master: each trial through cohort-launch with\n"
      "resources.slots_per_trial workers running the config's entrypoint inside CONTEXT_DIR,\n"
      "showing a live progress line, validations as they come and a summary at the end.");
  create->add_option("config", create_args->config_path, "Experiment config (YAML)")->required();
  create->add_option("context_dir", create_args->context_dir,
                     "Directory holding the trial program (the entrypoint runs inside it)")
      ->required();
  auto follow = std::make_shared<bool>(false);
  create->add_flag("--local", *local, "Run on this machine without a master");
  create->add_flag("-f,--follow", *follow,
                   "With a master: show each trial's progress until the experiment ends");
  create->add_flag("--test", create_args->test,
                   "Smoke test: the first trial only, 10 batches, one validation");
  create->add_option("--template,-t", *create_template,
                     "Template merged under the config: a file with --local, else the name of a "
                     "template stored on the master");
  create->add_option("--runs-dir", create_args->runs_dir,
                     "Where local runs are written (default: ./cohort-runs)");
  create->footer(
      "Examples:\n"
      "  cohort experiment create --local examples/fashion_mnist/distributed.yaml build/bin\n"
      "  cohort experiment create --local --test examples/fashion_mnist/const.yaml build/bin\n"
      "  cohort experiment create --local examples/core_api/3_hpsearch.yaml build/bin\n"
      "\n"
      "Output: <runs dir>/<name>-<time>/trial-N/{output.log,metrics.jsonl,checkpoints/}.\n"
      "Ctrl-C asks the running trial to checkpoint and stop; a second Ctrl-C kills it.\n"
      "Exit status: 0 every trial completed; 1 a trial failed or was stopped, or the config\n"
      "is invalid; 2 bad arguments (missing context directory or entrypoint).");
  create->callback([create_args, create_template, create, local, follow, master_flag, exit_code] {
    if (!*local) {
      // With a master the template is a name stored there (`cohort template set`).
      *exit_code = RunCreateRemote(*master_flag, create_args->config_path,
                                   create_args->context_dir, *create_template, *follow);
      return;
    }
    if (create->count("--template") > 0) create_args->template_path = *create_template;
    *exit_code = RunCreateLocal(*create_args, std::cout, std::cerr);
  });
  return experiment;
}

}  // namespace cohort::cli
