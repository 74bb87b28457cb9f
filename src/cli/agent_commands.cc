#include "cli/agent_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/cluster_bodies.h"

namespace cohort::cli {
namespace {

int ListAgents(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::AgentList> list = GetAs(client, "/api/v1/agents", wire::ParseAgentList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::AgentSummary& a : list->agents) {
    rows.push_back({a.id, a.host, a.resource_pool, absl::StrCat(a.slots), absl::StrCat(a.used),
                    YesNo(a.enabled), YesNo(a.connected)});
  }
  PrintTable(std::cout, {"id", "host", "pool", "slots", "used", "enabled", "connected"}, rows);
  return kExitOk;
}

int ListSlots(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::SlotList> list = GetAs(client, "/api/v1/slots", wire::ParseSlotList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::SlotEntry& s : list->slots) {
    rows.push_back({s.agent, absl::StrCat(s.slot), YesNo(s.enabled),
                    s.trial_id ? absl::StrCat(*s.trial_id) : "-", Cell(s.allocation)});
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
