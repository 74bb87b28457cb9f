#include "cli/agent_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/table.h"

namespace cohort::cli {
namespace {

int ListAgents(const CommandContext& context) {
  absl::StatusOr<Json> r = context.Client().Get("/api/v1/agents");
  if (!r.ok()) return Fail(r.status());
  if (context.json()) return PrintJson(*r);
  std::vector<std::vector<std::string>> rows;
  for (const Json& a : (*r)["agents"]) {
    rows.push_back({Str(a["id"]), Str(a["host"]), Str(a["slots"]), Str(a["used"]),
                    a["enabled"].get<bool>() ? "yes" : "no",
                    a["connected"].get<bool>() ? "yes" : "no"});
  }
  PrintTable(std::cout, {"id", "host", "slots", "used", "enabled", "connected"}, rows);
  return kExitOk;
}

int ListSlots(const CommandContext& context) {
  absl::StatusOr<Json> r = context.Client().Get("/api/v1/slots");
  if (!r.ok()) return Fail(r.status());
  if (context.json()) return PrintJson(*r);
  std::vector<std::vector<std::string>> rows;
  for (const Json& s : (*r)["slots"]) {
    rows.push_back({Str(s["agent"]), Str(s["slot"]), s["enabled"].get<bool>() ? "yes" : "no",
                    s.contains("trial_id") ? Str(s["trial_id"]) : "-",
                    s.contains("allocation") ? Str(s["allocation"]) : "-"});
  }
  PrintTable(std::cout, {"agent", "slot", "enabled", "trial", "allocation"}, rows);
  return kExitOk;
}

// enable, disable: a POST to /api/v1/agents/ID/VERB.
void AddEnableDisable(CLI::App* agent, CommandContext* context) {
  for (const std::string verb : {"enable", "disable"}) {
    auto agent_id = std::make_shared<std::string>();
    CLI::App* sub =
        agent->add_subcommand(verb, verb + " an agent (a disabled agent takes no new trials)");
    sub->add_option("id", *agent_id, "Agent id")->required();
    context->OnRun(sub, [context, agent_id, verb] {
      absl::StatusOr<Json> r =
          context->Client().Post(absl::StrCat("/api/v1/agents/", *agent_id, "/", verb));
      if (!r.ok()) return Fail(r.status());
      std::cout << "agent " << *agent_id << ": " << verb << "d\n";
      return kExitOk;
    });
  }
}

}  // namespace

void AddAgentCommands(CLI::App* root, CommandContext* context) {
  CLI::App* agent = root->add_subcommand("agent", "Agents (machines running trials)");
  agent->alias("a");
  agent->require_subcommand(1);
  CLI::App* list = agent->add_subcommand("list", "Every agent with its slots");
  list->alias("ls");
  context->AddJsonFlag(list);
  context->OnRun(list, [context] { return ListAgents(*context); });
  AddEnableDisable(agent, context);

  CLI::App* slot = root->add_subcommand("slot", "Slots");
  slot->alias("s");
  slot->require_subcommand(1);
  CLI::App* slot_list =
      slot->add_subcommand("list", "Every slot of every agent and what runs on it");
  slot_list->alias("ls");
  context->AddJsonFlag(slot_list);
  context->OnRun(slot_list, [context] { return ListSlots(*context); });
}

}  // namespace cohort::cli
