#include "cli/experiment_commands.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/exit_codes.h"
#include "cli/job_commands.h"
#include "cli/local_experiment.h"
#include "cli/remote_experiment.h"
#include "cli/search_commands.h"
#include "cli/table.h"
#include "cli/trial_commands.h"
#include "cli/validate_command.h"
#include "common/terminal_text.h"
#include "wire/experiment_bodies.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

void AddValidate(CLI::App* experiment, CommandContext* context) {
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
  validate->callback([validate_args, template_path, validate, context] {
    if (validate->count("--template") > 0) validate_args->template_path = *template_path;
    context->SetExitCode(RunValidate(*validate_args, std::cout, std::cerr));
  });
}

void AddCreate(CLI::App* experiment, CommandContext* context) {
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
  create
      ->add_option("context_dir", create_args->context_dir,
                   "Directory holding the trial program (the entrypoint runs inside it)")
      ->required();
  auto follow = std::make_shared<bool>(false);
  create->add_flag("--local", *local, "Run on this machine without a master");
  create->add_flag("-f,--follow", *follow,
                   "With a master: show each trial's progress until the experiment ends");
  create->add_flag("--test", create_args->test,
                   "Smoke test: one trial (the first; with a master a `single` searcher's), at "
                   "most 10 batches, one validation at the end");
  create->add_option("--config", create_args->overrides,
                     "KEY=VALUE: set one field of the config (dotted path; VALUE is YAML); "
                     "repeatable");
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
      "  cohort experiment create --test examples/fashion_mnist/distributed.yaml "
      "build/contexts/fashion_mnist\n"
      "  cohort experiment create examples/fashion_mnist/distributed.yaml "
      "build/contexts/fashion_mnist --config searcher.max_length.batches=500 "
      "--config resources.slots_per_trial=1\n"
      "\n"
      "Output: <runs dir>/<name>-<time>/trial-N/{output.log,metrics.jsonl,checkpoints/}.\n"
      "Ctrl-C asks the running trial to checkpoint and stop; a second Ctrl-C kills it.\n"
      "Exit status: 0 every trial completed; 1 a trial failed or was stopped, or the config\n"
      "is invalid; 2 bad arguments (missing context directory or entrypoint).");
  create->callback([create_args, create_template, create, local, follow, context] {
    if (!*local) {
      // With a master the template is a name stored there (`cohort template set`).
      context->SetExitCode(RunCreateRemote(*context, {.config_path = create_args->config_path,
                                                      .context_dir = create_args->context_dir,
                                                      .template_name = *create_template,
                                                      .overrides = create_args->overrides,
                                                      .test = create_args->test,
                                                      .follow = *follow}));
      return;
    }
    if (create->count("--template") > 0) create_args->template_path = *create_template;
    context->SetExitCode(RunCreateLocal(*create_args, std::cout, std::cerr));
  });
}

// The experiments, archived ones only with `all`; a line after the table says how many it hid.
int ListExperiments(const CommandContext& context, bool all,
                    const std::vector<std::string>& labels) {
  client::MasterClient client = context.Client();
  std::string path = "/api/v1/experiments";
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&path, i == 0 ? "?" : "&", "label=", UrlQueryValue(labels[i]));
  }
  absl::StatusOr<wire::ExperimentList> list = GetAs(client, path, wire::ParseExperimentList);
  if (!list.ok()) return Fail(list.status());
  std::vector<wire::ExperimentSummary>& shown = list->experiments;
  const auto archived = std::remove_if(shown.begin(), shown.end(),
                                       [all](const auto& e) { return e.archived && !all; });
  const size_t hidden = static_cast<size_t>(shown.end() - archived);
  shown.erase(archived, shown.end());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::ExperimentSummary& e : list->experiments) {
    rows.push_back({absl::StrCat(e.id), e.name, EmptyAsDash(e.owner), wire::Name(e.state),
                    absl::StrCat(e.trials_done, "/", e.trials), absl::StrCat(e.slots_per_trial),
                    absl::StrCat(e.priority), EmptyAsDash(e.template_name),
                    FormatTime(e.created_ms), e.archived ? "yes" : "",
                    e.labels.empty() ? "" : absl::StrJoin(e.labels, ",")});
  }
  PrintTable(std::cout,
             {"id", "name", "owner", "state", "trials done", "slots/trial", "priority", "template",
              "created", "archived", "labels"},
             rows);
  if (hidden > 0) {
    std::cout << hidden << " archived experiment(s) not shown (--all shows them)\n";
  }
  return kExitOk;
}

// The trials table of `experiment describe`, then each failed trial's last log lines.
void PrintTrials(const std::vector<wire::TrialDescription>& trials) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::TrialDescription& t : trials) {
    rows.push_back({absl::StrCat(t.id), wire::Name(t.state),
                    absl::StrCat(t.batches, "/", t.total_batches), absl::StrCat(t.restarts),
                    Cell(t.searcher_metric), EmptyAsDash(t.latest_checkpoint), Str(t.hparams),
                    Cell(t.waiting_reason)});
  }
  PrintTable(std::cout,
             {"trial", "state", "batches", "restarts", "searcher metric", "checkpoint",
              "hyperparameters", "waiting because"},
             rows);
  for (const wire::TrialDescription& t : trials) {
    if (t.error_lines) {
      std::cout << "\ntrial " << t.id << " failed; its last log lines:\n"
                << EscapeControl(*t.error_lines, /*keep_newlines=*/true) << "\n";
    }
    PrintLogPolicyMatches(std::cout, t);
  }
}

int DescribeExperiment(const CommandContext& context, int64_t id) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::ExperimentDescription> e =
      GetAs(client, absl::StrCat("/api/v1/experiments/", id), wire::ParseExperimentDescription);
  if (!e.ok()) return Fail(e.status());
  if (context.json()) return PrintJson(e->ToJson());
  std::cout << "experiment " << e->id << ": " << e->name << "  " << wire::Name(e->state)
            << (e->archived ? ", archived" : "") << "  (" << e->slots_per_trial
            << " slot(s) per trial, priority " << e->priority << ", template "
            << EmptyAsDash(e->template_name) << ")\n\n";
  PrintTrials(e->trials);
  std::cout << "\nconfig:\n" << e->config;
  return kExitOk;
}

void AddListAndDescribe(CLI::App* experiment, CommandContext* context) {
  auto all = std::make_shared<bool>(false);
  auto labels = std::make_shared<std::vector<std::string>>();
  CLI::App* list = experiment->add_subcommand("list", "List experiments (not archived ones)");
  list->alias("ls");
  list->add_flag("--all,-a", *all, "Archived experiments too");
  list->add_option("--label,-l", *labels, "Only those with this label (repeat: with all of them)");
  context->AddJsonFlag(list);
  context->OnRun(list, [context, all, labels] { return ListExperiments(*context, *all, *labels); });

  auto id = std::make_shared<int64_t>(0);
  CLI::App* describe =
      experiment->add_subcommand("describe", "Show an experiment, its config and trials");
  describe->add_option("id", *id, "Experiment id")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, id] { return DescribeExperiment(*context, *id); });

  auto wait_id = std::make_shared<int64_t>(0);
  CLI::App* wait = experiment->add_subcommand(
      "wait", "Follow an experiment until it ends (as create --follow); exit 0 if it COMPLETED");
  wait->add_option("id", *wait_id, "Experiment id")->required();
  wait->footer(
      "Progress goes to stderr; the final state, each trial's last validation and each failed "
      "trial's last lines to stdout.\n"
      "Exit status: 0 the experiment COMPLETED; 1 it ended CANCELED or ERROR, or the master "
      "could not be asked.\n"
      "Example:\n  cohort experiment create exp.yaml DIR && cohort experiment wait 7");
  context->OnRun(wait, [context, wait_id] { return WaitForExperiment(*context, *wait_id); });
}

// set FIELD ID VALUE: the scheduling fields through the job queue (job_commands.h); name,
// description and labels as a PATCH of /api/v1/experiments/ID (Determined's `det experiment
// set`), labels comma-separated ("" clears them).
int SetField(const CommandContext& context, const std::string& field, int64_t id,
             const std::string& value) {
  if (field == "priority" || field == "weight" || field == "max-slots") {
    return SetSchedulingField(context, field, id, value);
  }
  wire::ExperimentPatch patch;
  if (field == "name") patch.name = value;
  if (field == "description") patch.description = value;
  if (field == "labels") {
    patch.labels = std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty()));
  }
  absl::StatusOr<Json> r =
      context.Client().Patch(absl::StrCat("/api/v1/experiments/", id), patch.ToJson());
  if (!r.ok()) return Fail(r.status());
  std::cout << "experiment " << id << ": " << field << " set\n";
  return kExitOk;
}

void AddSet(CLI::App* experiment, CommandContext* context) {
  auto field = std::make_shared<std::string>();
  auto id = std::make_shared<int64_t>(0);
  auto value = std::make_shared<std::string>();
  CLI::App* set = experiment->add_subcommand(
      "set",
      "Change an experiment's name, description, labels, or (running) priority, weight, "
      "max-slots");
  set->add_option("field", *field, "name, description, labels, priority, weight or max-slots")
      ->required()
      ->check(CLI::IsMember({"name", "description", "labels", "priority", "weight", "max-slots"}));
  set->add_option("id", *id, "Experiment id")->required();
  set->add_option("value", *value, "The new value (labels: comma-separated, \"\" clears them)")
      ->required();
  set->footer(
      "Examples:\n  cohort experiment set labels 7 baseline,resnet\n"
      "  cohort experiment list --label baseline\n"
      "  cohort experiment set priority 7 10");
  context->OnRun(set,
                 [context, field, id, value] { return SetField(*context, *field, *id, *value); });
}

// pause, activate, kill, archive, unarchive: a POST to /api/v1/experiments/ID/VERB.
void AddLifecycleVerbs(CLI::App* experiment, CommandContext* context) {
  const std::pair<std::string, std::string> verbs[] = {
      {"pause", "Pause (trials checkpoint and stop)"},
      {"activate", "Resume a paused experiment"},
      {"kill", "Stop an experiment for good, freeing its slots"},
      {"archive", "Hide an ended experiment from `experiment list` (--all shows it)"},
      {"unarchive", "Show an archived experiment in `experiment list` again"}};
  for (const auto& [verb, help] : verbs) {
    auto target = std::make_shared<int64_t>(0);
    CLI::App* sub = experiment->add_subcommand(verb, help);
    sub->add_option("id", *target, "Experiment id")->required();
    context->OnRun(sub, [context, target, v = verb] {
      absl::StatusOr<Json> r =
          context->Client().Post(absl::StrCat("/api/v1/experiments/", *target, "/", v));
      if (!r.ok()) return Fail(r.status());
      // Archiving is done when the master answers; the others are under way.
      std::cout << "experiment " << *target << ": "
                << (v == "archive" || v == "unarchive" ? v + "d" : v + " requested") << "\n";
      return kExitOk;
    });
  }
}

// delete: a DELETE of /api/v1/experiments/ID (Determined's `det experiment delete`).
void AddDelete(CLI::App* experiment, CommandContext* context) {
  auto id = std::make_shared<int64_t>(0);
  auto yes = std::make_shared<bool>(false);
  CLI::App* sub = experiment->add_subcommand(
      "delete", "Delete an ended experiment with its trials, checkpoints, logs and metrics");
  sub->add_option("id", *id, "Experiment id")->required();
  sub->add_flag("--yes,-y", *yes, "Do not ask for confirmation");
  sub->footer(
      "Only an experiment that ended (COMPLETED, CANCELED, ERROR) can be deleted: kill an "
      "active one first. It shows as DELETING until the master has removed everything, then "
      "it is gone. Checkpoints in a storage the master cannot reach are left where they are "
      "(the master's log names them).\n"
      "Example:\n  cohort experiment kill 7 && cohort experiment delete 7 --yes");
  context->OnRun(sub, [context, id, yes] {
    return DeleteAfterAsking(
        *context, *yes, absl::StrCat("experiment ", *id),
        absl::StrCat("Delete experiment ", *id,
                     " with its trials, checkpoints, logs and metrics? This cannot be undone."),
        absl::StrCat("/api/v1/experiments/", *id),
        absl::StrCat("experiment ", *id,
                     ": deleting (`cohort experiment list` shows it until it is gone)"));
  });
}

// fork: a new experiment from an existing one's context and config (Determined's fork).
void AddFork(CLI::App* experiment, CommandContext* context) {
  auto args = std::make_shared<ConfigChangeArgs>();
  CLI::App* fork = experiment->add_subcommand(
      "fork", "Create an experiment from another one's context and config, changed as given");
  fork->add_option("id", args->id, "The experiment to fork")->required();
  AddConfigChangeOptions(fork, args.get(), "Use this config instead of the parent's (YAML)");
  fork->footer(
      "The fork runs the parent's context (its code) with the parent's effective config: its\n"
      "template merged and its experiment_seed kept, so the same hyperparameter draws unless\n"
      "--config reproducibility.experiment_seed=N says otherwise. Only the parent's owner or an\n"
      "admin may fork it.\n"
      "Examples:\n"
      "  cohort experiment fork 7 --config hyperparameters.lr=0.01 --config name=mnist-lr\n"
      "  cohort experiment fork 7 --config-file changed.yaml --follow");
  context->OnRun(fork, [context, args] { return RunFork(*context, *args); });
}

// continue: the ended experiment trains again (Determined's `det experiment continue`).
void AddContinue(CLI::App* experiment, CommandContext* context) {
  auto args = std::make_shared<ConfigChangeArgs>();
  CLI::App* sub = experiment->add_subcommand(
      "continue", "Train an ended experiment's trials further, from their latest checkpoints");
  sub->add_option("id", args->id, "Experiment id")->required();
  AddConfigChangeOptions(sub, args.get(), "A partial config (YAML) merged over the experiment's");
  context->AddJsonFlag(sub, "Print {\"id\", \"warnings\"} as JSON (without --follow)");
  sub->footer(
      "The experiment keeps its id, trials, metrics and logs; it is ACTIVE again and each trial\n"
      "it trains again resumes from its latest checkpoint (from the start when it has none),\n"
      "its restarts counted from 0. A single-trial experiment trains its trial again with the\n"
      "config changed as given (a longer searcher.max_length, hyperparameters, environment,\n"
      "max_restarts); searcher.name, checkpoint_storage and resources.resource_pool stay. A\n"
      "random or grid search trains its CANCELED and ERROR trials again (and creates those it\n"
      "never did), its config unchanged; an adaptive_asha search cannot continue (fork it).\n"
      "Only the owner or an admin may continue an experiment.\n"
      "Examples:\n"
      "  cohort experiment continue 7 --config searcher.max_length.batches=4000 --follow\n"
      "  cohort experiment continue 7 --config max_restarts=1\n"
      "  cohort experiment continue 9   # a killed random search: its CANCELED trials");
  context->OnRun(sub, [context, args] { return RunContinue(*context, *args); });
}

}  // namespace

void AddExperimentCommands(CLI::App* root, CommandContext* context) {
  CLI::App* experiment = root->add_subcommand("experiment", "Manage experiments");
  experiment->alias("e");
  experiment->require_subcommand(1);
  AddValidate(experiment, context);
  AddCreate(experiment, context);
  AddListAndDescribe(experiment, context);
  AddSet(experiment, context);
  AddExperimentTrials(experiment, context);
  AddLifecycleVerbs(experiment, context);
  AddDelete(experiment, context);
  AddFork(experiment, context);
  AddContinue(experiment, context);
}

}  // namespace cohort::cli
