#include "cli/task_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/cluster_bodies.h"
#include "wire/states.h"

namespace cohort::cli {
namespace {

int ListTasks(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::TaskList> list = GetAs(client, "/api/v1/tasks", wire::ParseTaskList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::TaskEntry& t : list->tasks) {
    rows.push_back({absl::StrCat(t.trial_id), absl::StrCat(t.experiment_id), wire::Name(t.state),
                    absl::StrCat(t.slots), absl::StrCat(t.priority),
                    t.agents ? absl::StrJoin(*t.agents, ",") : "-", Cell(t.reason)});
  }
  PrintTable(std::cout, {"trial", "experiment", "state", "slots", "priority", "agents", "reason"},
             rows);
  return kExitOk;
}

}  // namespace

void AddTaskCommands(CLI::App* root, CommandContext* context) {
  CLI::App* task = root->add_subcommand("task", "Tasks (trials waiting or running)");
  task->require_subcommand(1);
  CLI::App* list = task->add_subcommand("list", "Every waiting or running trial, and why it waits");
  list->alias("ls");
  context->AddJsonFlag(list);
  context->OnRun(list, [context] { return ListTasks(*context); });
}

}  // namespace cohort::cli
