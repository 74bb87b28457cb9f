#include "cli/checkpoint_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "cohort/status.h"
#include "wire/experiment_bodies.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

struct ListArgs {
  int64_t experiment_id = 0;
  int64_t trial_id = 0;
};

struct Row {
  int64_t trial_id = 0;
  wire::CheckpointEntry checkpoint;
};

// The trials to list: one, or every trial of the experiment.
absl::StatusOr<std::vector<int64_t>> TrialsOf(client::MasterClient& client, const ListArgs& args) {
  if (args.trial_id > 0) return std::vector<int64_t>{args.trial_id};
  COHORT_ASSIGN_OR_RETURN(wire::ExperimentDescription e,
                          GetAs(client, absl::StrCat("/api/v1/experiments/", args.experiment_id),
                                [](const Json& j) { return wire::ParseExperimentDescription(j); }));
  std::vector<int64_t> ids;
  for (const wire::TrialDescription& t : e.trials) ids.push_back(t.id);
  return ids;
}

int ListCheckpoints(const CommandContext& context, const ListArgs& args) {
  if ((args.experiment_id > 0) == (args.trial_id > 0)) {
    return Fail(absl::InvalidArgumentError(
        "name an experiment (`cohort checkpoint list 3`) or a trial (`--trial 7`), not both"));
  }
  client::MasterClient client = context.Client();
  absl::StatusOr<std::vector<int64_t>> trials = TrialsOf(client, args);
  if (!trials.ok()) return Fail(trials.status());
  std::vector<Row> rows;
  for (int64_t trial : *trials) {
    absl::StatusOr<wire::CheckpointList> list = GetAs(
        client, absl::StrCat("/api/v1/trials/", trial, "/checkpoints"), wire::ParseCheckpointList);
    if (!list.ok()) return Fail(list.status());
    for (wire::CheckpointEntry& c : list->checkpoints) rows.push_back({trial, std::move(c)});
  }
  if (context.json()) {
    Json out = Json::array();
    for (const Row& r : rows) {
      Json entry = wire::CheckpointList{{r.checkpoint}}.ToJson()["checkpoints"][0];
      entry["trial_id"] = r.trial_id;
      out.push_back(entry);
    }
    return PrintJson(Json{{"checkpoints", out}});
  }
  if (rows.empty()) {
    std::cout << "no checkpoints yet\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> table;
  for (const Row& r : rows) {
    table.push_back({absl::StrCat(r.trial_id), r.checkpoint.storage_id,
                     absl::StrCat(r.checkpoint.steps_completed), wire::Name(r.checkpoint.state),
                     EmptyAsDash(r.checkpoint.path)});
  }
  PrintTable(std::cout, {"trial", "checkpoint", "batch", "state", "path"}, table);
  return kExitOk;
}

}  // namespace

void AddCheckpointCommands(CLI::App* root, CommandContext* context) {
  CLI::App* group = root->add_subcommand("checkpoint", "Checkpoints: list");
  group->alias("c");
  group->require_subcommand(1);
  auto args = std::make_shared<ListArgs>();
  CLI::App* list = group->add_subcommand(
      "list", "An experiment's (or a trial's) checkpoints, kept or deleted by the checkpoint GC");
  list->add_option("experiment", args->experiment_id, "Experiment id");
  list->add_option("--trial", args->trial_id, "Only this trial's checkpoints");
  context->AddJsonFlag(list);
  list->footer("Examples:\n  cohort checkpoint list 3\n  cohort checkpoint list --trial 7 --json");
  context->OnRun(list, [context, args] { return ListCheckpoints(*context, *args); });
}

}  // namespace cohort::cli
