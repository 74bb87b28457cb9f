#include "cli/task_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/table.h"

namespace cohort::cli {
namespace {

int ListTasks(const CommandContext& context) {
  absl::StatusOr<Json> r = context.Client().Get("/api/v1/tasks");
  if (!r.ok()) return Fail(r.status());
  if (context.json()) return PrintJson(*r);
  std::vector<std::vector<std::string>> rows;
  for (const Json& t : (*r)["tasks"]) {
    rows.push_back({Str(t["trial_id"]), Str(t["experiment_id"]), Str(t["state"]), Str(t["slots"]),
                    Str(t["priority"]),
                    t.contains("agents")
                        ? absl::StrJoin(t["agents"].get<std::vector<std::string>>(), ",")
                        : "-",
                    t.contains("reason") ? Str(t["reason"]) : "-"});
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
