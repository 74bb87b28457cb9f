#include "cli/job_commands.h"

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/job_bodies.h"

namespace cohort::cli {
namespace {

int ListPools(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::ResourcePoolList> list =
      GetAs(client, "/api/v1/resource-pools", wire::ParseResourcePoolList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::ResourcePoolSummary& p : list->pools) {
    rows.push_back({p.name, p.scheduler, YesNo(p.preemption), absl::StrCat(p.agents),
                    absl::StrCat(p.used, "/", p.slots), absl::StrCat(p.trials_running),
                    absl::StrCat(p.trials_queued), EmptyAsDash(p.description)});
  }
  PrintTable(std::cout,
             {"pool", "scheduler", "preemption", "agents", "slots used", "running", "queued",
              "description"},
             rows);
  return kExitOk;
}

int ListJobs(const CommandContext& context, const std::string& pool) {
  client::MasterClient client = context.Client();
  const std::string path = pool.empty() ? "/api/v1/jobs" : "/api/v1/jobs?pool=" + pool;
  absl::StatusOr<wire::JobList> list = GetAs(client, path, wire::ParseJobList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::JobEntry& j : list->jobs) {
    rows.push_back({j.pool, absl::StrCat(j.position), absl::StrCat(j.experiment_id), j.name,
                    EmptyAsDash(j.owner), j.state, absl::StrCat(j.priority), Str(j.weight),
                    j.max_slots > 0 ? absl::StrCat(j.max_slots) : "-", absl::StrCat(j.slots_held),
                    absl::StrCat(j.trials_running), absl::StrCat(j.trials_queued),
                    EmptyAsDash(j.waiting)});
  }
  PrintTable(std::cout,
             {"pool", "#", "experiment", "name", "owner", "state", "priority", "weight",
              "max slots", "slots held", "running", "queued", "waiting"},
             rows);
  return kExitOk;
}

int Update(const CommandContext& context, int64_t id, const wire::JobUpdate& update) {
  if (update.ToJson().empty()) {
    std::cerr << "cohort: error: nothing to change: give --priority, --weight, --max-slots, "
                 "--ahead-of or --behind-of\n";
    return kExitUsage;
  }
  absl::StatusOr<Json> r =
      context.Client().Post(absl::StrCat("/api/v1/jobs/", id), update.ToJson());
  if (!r.ok()) return Fail(r.status());
  std::cout << "experiment " << id << ": " << update.ToJson().dump() << "\n";
  return kExitOk;
}

void AddUpdate(CLI::App* job, CommandContext* context) {
  struct Args {
    int64_t id = 0;
    std::optional<int> priority, max_slots;
    std::optional<double> weight;
    std::optional<int64_t> ahead_of, behind_of;
  };
  auto args = std::make_shared<Args>();
  CLI::App* update = job->add_subcommand("update", "Change a job's priority, weight, cap or place");
  update->add_option("id", args->id, "Experiment id")->required();
  update->add_option("--priority", args->priority, "1-99, lower runs first")
      ->check(CLI::Range(1, 99));
  update->add_option("--weight", args->weight, "Fair-share weight (> 0)")
      ->check(CLI::PositiveNumber);
  update->add_option("--max-slots", args->max_slots, "Most slots held at once (0: no cap)")
      ->check(CLI::NonNegativeNumber);
  auto* ahead = update->add_option("--ahead-of", args->ahead_of,
                                   "Queue just before this experiment (taking its priority)");
  update
      ->add_option("--behind-of", args->behind_of,
                   "Queue just after this experiment (taking its priority)")
      ->excludes(ahead);
  context->OnRun(update, [context, args] {
    return Update(*context, args->id,
                  {args->priority, args->weight, args->max_slots, args->ahead_of, args->behind_of});
  });
}

}  // namespace

void AddJobCommands(CLI::App* root, CommandContext* context) {
  CLI::App* pools = root->add_subcommand("resource-pool", "Resource pools (docs/scheduling.md)");
  pools->alias("rp");
  pools->require_subcommand(1);
  CLI::App* list_pools =
      pools->add_subcommand("list", "Each pool: scheduler, agents, slots, trials");
  list_pools->alias("ls");
  context->AddJsonFlag(list_pools);
  context->OnRun(list_pools, [context] { return ListPools(*context); });

  CLI::App* job =
      root->add_subcommand("job", "The queue of experiments, as the scheduler serves it");
  job->require_subcommand(1);
  auto pool = std::make_shared<std::string>();
  CLI::App* list = job->add_subcommand("list", "Jobs in order, with why each waits");
  list->alias("ls");
  list->add_option("--pool", *pool, "Only this resource pool");
  context->AddJsonFlag(list);
  context->OnRun(list, [context, pool] { return ListJobs(*context, *pool); });
  AddUpdate(job, context);
}

int SetSchedulingField(const CommandContext& context, const std::string& field, int64_t id,
                       const std::string& value) {
  wire::JobUpdate update;
  double weight = 0;
  int whole = 0;
  const bool is_weight = field == "weight";
  if (is_weight ? !absl::SimpleAtod(value, &weight) : !absl::SimpleAtoi(value, &whole)) {
    std::cerr << "cohort: error: " << field << ": expected "
              << (is_weight ? "a number" : "an integer") << ", got '" << value << "'\n";
    return kExitUsage;
  }
  if (is_weight) {
    update.weight = weight;
  } else if (field == "priority") {
    update.priority = whole;
  } else {
    update.max_slots = whole;
  }
  return Update(context, id, update);
}

}  // namespace cohort::cli
