#include "cli/trial_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/table.h"

namespace cohort::cli {
namespace {

struct LogsArgs {
  int64_t trial_id = 0;
  int rank = -1;  // -1: every rank
  bool follow = false;
};

// Pages through the trial's logs (a long poll with --follow) until there is nothing more to
// print, or with --follow until the trial ends.
int PrintLogs(const CommandContext& context, const LogsArgs& args) {
  client::MasterClient client = context.Client(absl::Seconds(90));
  int64_t after = 0;
  while (true) {
    std::string path = absl::StrCat("/api/v1/trials/", args.trial_id, "/logs?after=", after);
    if (args.rank >= 0) absl::StrAppend(&path, "&rank=", args.rank);
    if (args.follow) absl::StrAppend(&path, "&follow=1&timeout=30");
    absl::StatusOr<Json> r = client.Get(path);
    if (!r.ok()) return Fail(r.status());
    for (const Json& l : (*r)["logs"]) {
      if (context.json()) {
        std::cout << l.dump() << "\n";
      } else if (l["rank"].get<int>() >= 0) {
        std::cout << "[rank=" << l["rank"] << "] " << Str(l["line"]) << "\n";
      } else {
        std::cout << Str(l["line"]) << "\n";
      }
    }
    std::cout.flush();
    after = (*r)["next"].get<int64_t>();
    if ((*r)["logs"].empty() && (!args.follow || (*r)["done"].get<bool>())) return kExitOk;
  }
}

int DescribeTrial(const CommandContext& context, int64_t trial_id) {
  client::MasterClient client = context.Client();
  absl::StatusOr<Json> t = client.Get(absl::StrCat("/api/v1/trials/", trial_id));
  if (!t.ok()) return Fail(t.status());
  absl::StatusOr<Json> m =
      client.Get(absl::StrCat("/api/v1/trials/", trial_id, "/metrics?kind=validation"));
  absl::StatusOr<Json> c = client.Get(absl::StrCat("/api/v1/trials/", trial_id, "/checkpoints"));
  if (!m.ok()) return Fail(m.status());
  if (!c.ok()) return Fail(c.status());
  if (context.json()) {
    return PrintJson(
        Json{{"trial", *t}, {"validation", (*m)["metrics"]}, {"checkpoints", (*c)["checkpoints"]}});
  }
  std::cout << "trial " << trial_id << " (experiment " << (*t)["experiment_id"]
            << "): " << Str((*t)["state"]) << ", " << (*t)["batches"] << "/"
            << (*t)["total_batches"] << " batches, hyperparameters " << Str((*t)["hparams"])
            << "\n\nvalidation:\n";
  std::vector<std::vector<std::string>> rows;
  for (const Json& v : (*m)["metrics"]) {
    std::vector<std::string> parts;
    for (const auto& [k, x] : v["metrics"].items()) parts.push_back(absl::StrCat(k, "=", Str(x)));
    rows.push_back({Str(v["steps_completed"]), absl::StrJoin(parts, " ")});
  }
  PrintTable(std::cout, {"batches", "metrics"}, rows);
  std::cout << "\ncheckpoints:\n";
  rows.clear();
  for (const Json& ck : (*c)["checkpoints"]) {
    rows.push_back({Str(ck["storage_id"]), Str(ck["steps_completed"]), Str(ck["path"])});
  }
  PrintTable(std::cout, {"storage id", "batches", "path"}, rows);
  return kExitOk;
}

}  // namespace

void AddTrialCommands(CLI::App* root, CommandContext* context) {
  CLI::App* trial = root->add_subcommand("trial", "Trials: logs, details");
  trial->alias("t");
  trial->require_subcommand(1);

  auto logs_args = std::make_shared<LogsArgs>();
  CLI::App* logs = trial->add_subcommand("logs", "Print a trial's log lines (every rank, or one)");
  logs->add_option("id", logs_args->trial_id, "Trial id")->required();
  logs->add_option("--rank", logs_args->rank, "Only this rank's lines")
      ->check(CLI::NonNegativeNumber);
  logs->add_flag("-f,--follow", logs_args->follow, "Keep printing new lines until the trial ends");
  context->AddJsonFlag(logs, "One JSON object per line: {seq, rank, line}");
  logs->footer("Examples:\n  cohort trial logs 3\n  cohort trial logs 3 --rank 1 --follow");
  context->OnRun(logs, [context, logs_args] { return PrintLogs(*context, *logs_args); });

  auto trial_id = std::make_shared<int64_t>(0);
  CLI::App* describe =
      trial->add_subcommand("describe", "Show a trial with its metrics and checkpoints");
  describe->add_option("id", *trial_id, "Trial id")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, trial_id] { return DescribeTrial(*context, *trial_id); });
}

}  // namespace cohort::cli
