#include "cli/cluster_commands.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/master_client.h"
#include "cli/cluster_up.h"
#include "cli/exit_codes.h"
#include "cli/progress_meter.h"
#include "cli/table.h"
#include "common/subprocess.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;
using client::MasterClient;
using client::Json;

constexpr size_t kMaxContextBytes = 96u << 20;

std::string Str(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return absl::StrFormat("%.6g", v.get<double>());
  return v.dump();
}

std::string FormatTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(ms), absl::LocalTimeZone());
}

// Prints a failed request's error (the master's words, or what to do when it is unreachable)
// and returns the exit code of a failed command.
int Fail(const absl::Status& status) {
  std::cerr << "cohort: error: " << status.message() << "\n";
  return kExitInvalid;
}

// The context directory as tar.gz bytes (tar from Debian's base system).
absl::StatusOr<std::string> PackContext(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("context directory ", dir, " does not exist"));
  }
  const fs::path archive = fs::temp_directory_path() / absl::StrCat("cohort-context-", ::getpid(), ".tar.gz");
  auto tar = Subprocess::Start({.argv = {"tar", "czf", archive.string(), "-C", dir, "."}});
  if (!tar.ok()) return tar.status();
  std::string out;
  while ((*tar)->ReadAvailable(&out, absl::Milliseconds(200))) {}
  absl::StatusOr<int> status = (*tar)->Wait(absl::Minutes(5));
  if (!status.ok() || *status != 0) {
    fs::remove(archive, ec);
    return absl::InternalError(absl::StrCat("packing ", dir, " with tar failed: ", out));
  }
  std::ifstream in(archive, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  fs::remove(archive, ec);
  if (bytes.str().size() > kMaxContextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context directory ", dir, " packs to ", bytes.str().size() >> 20,
        " MB; the master takes at most 96 MB: move data out of it (trials can read it from a "
        "path in the config's `data` section)"));
  }
  return bytes.str();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Common {
  const std::string* master_flag;
  bool json = false;
  MasterClient Client() const { return MasterClient(client::MasterUrl(*master_flag)); }
};

// Prints the trials' progress until the experiment ends; returns the exit code.
int Follow(const Common& c, int64_t id) {
  MasterClient client = c.Client();
  std::map<int64_t, std::unique_ptr<ProgressMeter>> meters;
  std::map<int64_t, std::string> last_state;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  absl::Time last_print = absl::InfinitePast();
  while (true) {
    absl::StatusOr<Json> e = client.Get(absl::StrCat("/api/v1/experiments/", id));
    if (!e.ok()) return Fail(e.status());
    std::vector<std::string> lines;
    for (const Json& t : (*e)["trials"]) {
      const int64_t tid = t["id"].get<int64_t>();
      auto& meter = meters[tid];
      if (!meter) meter = std::make_unique<ProgressMeter>(absl::StrCat("trial ", tid), 0);
      const std::string state = t["state"];
      if (t["total_batches"].get<int64_t>() > 0) {
        meter->Update({.completed = static_cast<double>(t["batches"].get<int64_t>()),
                       .total = static_cast<double>(t["total_batches"].get<int64_t>())},
                      absl::Now());
      }
      std::string line = meter->has_snapshot() ? meter->Line() : absl::StrCat("trial ", tid);
      absl::StrAppend(&line, "  ", state);
      if (t.contains("waiting_reason")) absl::StrAppend(&line, " (", Str(t["waiting_reason"]), ")");
      if (state != last_state[tid]) {
        if (tty) std::cerr << "\r\x1b[K";
        std::cerr << "trial " << tid << ": " << state
                  << (t.contains("waiting_reason") ? " (" + Str(t["waiting_reason"]) + ")" : "")
                  << "\n";
        last_state[tid] = state;
      }
      lines.push_back(line);
    }
    const std::string state = (*e)["state"];
    const bool done = state != "ACTIVE" && state != "PAUSED";
    if (tty) {
      std::cerr << "\r\x1b[K" << absl::StrJoin(lines, " | ") << std::flush;
    } else if (absl::Now() - last_print > absl::Seconds(10) || done) {
      for (const std::string& l : lines) std::cerr << l << "\n";
      last_print = absl::Now();
    }
    if (done) {
      if (tty) std::cerr << "\n";
      std::cout << "experiment " << id << " " << state << "\n";
      for (const Json& t : (*e)["trials"]) {
        if (t.contains("error_lines")) {
          std::cout << "trial " << t["id"] << " failed; its last lines:\n" << Str(t["error_lines"]) << "\n";
        }
      }
      return state == "COMPLETED" ? kExitOk : kExitInvalid;
    }
    absl::SleepFor(absl::Seconds(1));
  }
}

}  // namespace

void AddClusterCommands(CLI::App* root, CLI::App* experiment, const std::string* master_flag,
                        int* exit_code) {
  auto common = std::make_shared<Common>();
  common->master_flag = master_flag;
  auto add_json = [common](CLI::App* verb) {
    verb->add_flag("--json", common->json, "Print JSON instead of a table");
  };
  auto run = [exit_code](CLI::App* verb, std::function<int()> body) {
    verb->callback([exit_code, body] { *exit_code = body(); });
  };

  // experiment list|describe|pause|activate|kill (create is in experiment_commands.cc and comes
  // here through RunCreateRemote).
  CLI::App* list = experiment->add_subcommand("list", "List experiments");
  list->alias("ls");
  add_json(list);
  run(list, [common] {
    absl::StatusOr<Json> r = common->Client().Get("/api/v1/experiments");
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const Json& e : (*r)["experiments"]) {
      rows.push_back({Str(e["id"]), Str(e["name"]), Str(e["state"]),
                      absl::StrCat(e["trials_done"].get<int>(), "/", e["trials"].get<int>()),
                      Str(e["slots_per_trial"]), Str(e["priority"]),
                      e["template"].get<std::string>().empty() ? "-" : Str(e["template"]),
                      FormatTime(e["created_ms"].get<int64_t>())});
    }
    PrintTable(std::cout, {"id", "name", "state", "trials done", "slots/trial", "priority", "template", "created"}, rows);
    return kExitOk;
  });

  auto id = std::make_shared<int64_t>(0);
  CLI::App* describe = experiment->add_subcommand("describe", "Show an experiment, its config and trials");
  describe->add_option("id", *id, "Experiment id")->required();
  add_json(describe);
  run(describe, [common, id] {
    absl::StatusOr<Json> r = common->Client().Get(absl::StrCat("/api/v1/experiments/", *id));
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    const Json& e = *r;
    std::cout << "experiment " << e["id"] << ": " << Str(e["name"]) << "  " << Str(e["state"])
              << "  (" << Str(e["slots_per_trial"]) << " slots per trial, priority "
              << Str(e["priority"]) << ", template "
              << (e["template"].get<std::string>().empty() ? "-" : Str(e["template"])) << ")\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const Json& t : e["trials"]) {
      rows.push_back({Str(t["id"]), Str(t["state"]),
                      absl::StrCat(t["batches"].get<int64_t>(), "/", t["total_batches"].get<int64_t>()),
                      Str(t["restarts"]), Str(t["searcher_metric"]),
                      t["latest_checkpoint"].get<std::string>().empty() ? "-" : Str(t["latest_checkpoint"]),
                      Str(t["hparams"]),
                      t.contains("waiting_reason") ? Str(t["waiting_reason"]) : "-"});
    }
    PrintTable(std::cout, {"trial", "state", "batches", "restarts", "searcher metric", "checkpoint", "hyperparameters", "waiting because"}, rows);
    for (const Json& t : e["trials"]) {
      if (t.contains("error_lines")) {
        std::cout << "\ntrial " << t["id"] << " failed; its last log lines:\n" << Str(t["error_lines"]) << "\n";
      }
    }
    std::cout << "\nconfig:\n" << Str(e["config"]);
    return kExitOk;
  });

  for (const char* verb : {"pause", "activate", "kill"}) {
    auto target = std::make_shared<int64_t>(0);
    CLI::App* sub = experiment->add_subcommand(
        verb, absl::StrCat(verb == std::string("pause") ? "Pause (trials checkpoint and stop)"
                           : verb == std::string("activate") ? "Resume a paused experiment"
                                                             : "Stop an experiment for good, freeing its slots"));
    sub->add_option("id", *target, "Experiment id")->required();
    run(sub, [common, target, v = std::string(verb)] {
      absl::StatusOr<Json> r = common->Client().Post(absl::StrCat("/api/v1/experiments/", *target, "/", v));
      if (!r.ok()) return Fail(r.status());
      std::cout << "experiment " << *target << ": " << v << " requested\n";
      return kExitOk;
    });
  }

  // trial logs|describe
  CLI::App* trial = root->add_subcommand("trial", "Trials: logs, details");
  trial->alias("t");
  trial->require_subcommand(1);
  auto trial_id = std::make_shared<int64_t>(0);
  auto rank = std::make_shared<int>(-1);
  auto follow = std::make_shared<bool>(false);
  CLI::App* logs = trial->add_subcommand("logs", "Print a trial's log lines (every rank, or one)");
  logs->add_option("id", *trial_id, "Trial id")->required();
  logs->add_option("--rank", *rank, "Only this rank's lines")->check(CLI::NonNegativeNumber);
  logs->add_flag("-f,--follow", *follow, "Keep printing new lines until the trial ends");
  logs->add_flag("--json", common->json, "One JSON object per line: {seq, rank, line}");
  logs->footer("Examples:\n  cohort trial logs 3\n  cohort trial logs 3 --rank 1 --follow");
  run(logs, [common, trial_id, rank, follow] {
    MasterClient client(client::MasterUrl(*common->master_flag), absl::Seconds(90));
    int64_t after = 0;
    while (true) {
      std::string path = absl::StrCat("/api/v1/trials/", *trial_id, "/logs?after=", after);
      if (*rank >= 0) absl::StrAppend(&path, "&rank=", *rank);
      if (*follow) absl::StrAppend(&path, "&follow=1&timeout=30");
      absl::StatusOr<Json> r = client.Get(path);
      if (!r.ok()) return Fail(r.status());
      for (const Json& l : (*r)["logs"]) {
        if (common->json) {
          std::cout << l.dump() << "\n";
        } else if (l["rank"].get<int>() >= 0) {
          std::cout << "[rank=" << l["rank"] << "] " << Str(l["line"]) << "\n";
        } else {
          std::cout << Str(l["line"]) << "\n";
        }
      }
      std::cout.flush();
      after = (*r)["next"].get<int64_t>();
      if ((*r)["logs"].empty() && (!*follow || (*r)["done"].get<bool>())) return kExitOk;
    }
  });
  CLI::App* tdescribe = trial->add_subcommand("describe", "Show a trial with its metrics and checkpoints");
  tdescribe->add_option("id", *trial_id, "Trial id")->required();
  add_json(tdescribe);
  run(tdescribe, [common, trial_id] {
    MasterClient client = common->Client();
    absl::StatusOr<Json> t = client.Get(absl::StrCat("/api/v1/trials/", *trial_id));
    if (!t.ok()) return Fail(t.status());
    absl::StatusOr<Json> m = client.Get(absl::StrCat("/api/v1/trials/", *trial_id, "/metrics?kind=validation"));
    absl::StatusOr<Json> c = client.Get(absl::StrCat("/api/v1/trials/", *trial_id, "/checkpoints"));
    if (!m.ok()) return Fail(m.status());
    if (!c.ok()) return Fail(c.status());
    if (common->json) {
      return std::cout << Json{{"trial", *t}, {"validation", (*m)["metrics"]}, {"checkpoints", (*c)["checkpoints"]}}.dump(2) << "\n", kExitOk;
    }
    std::cout << "trial " << *trial_id << " (experiment " << (*t)["experiment_id"] << "): "
              << Str((*t)["state"]) << ", " << (*t)["batches"] << "/" << (*t)["total_batches"]
              << " batches, hyperparameters " << Str((*t)["hparams"]) << "\n\nvalidation:\n";
    std::vector<std::vector<std::string>> rows;
    for (const Json& v : (*m)["metrics"]) {
      std::vector<std::string> parts;
      for (const auto& [k, x] : v["metrics"].items()) parts.push_back(absl::StrCat(k, "=", Str(x)));
      rows.push_back({Str(v["steps_completed"]), absl::StrJoin(parts, " ")});
    }
    PrintTable(std::cout, {"batches", "metrics"}, rows);
    std::cout << "\ncheckpoints:\n";
    rows.clear();
    for (const Json& ck : (*c)["checkpoints"]) rows.push_back({Str(ck["storage_id"]), Str(ck["steps_completed"]), Str(ck["path"])});
    PrintTable(std::cout, {"storage id", "batches", "path"}, rows);
    return kExitOk;
  });

  // task list
  CLI::App* task = root->add_subcommand("task", "Tasks (trials waiting or running)");
  task->require_subcommand(1);
  CLI::App* tlist = task->add_subcommand("list", "Every waiting or running trial, and why it waits");
  tlist->alias("ls");
  add_json(tlist);
  run(tlist, [common] {
    absl::StatusOr<Json> r = common->Client().Get("/api/v1/tasks");
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const Json& t : (*r)["tasks"]) {
      rows.push_back({Str(t["trial_id"]), Str(t["experiment_id"]), Str(t["state"]), Str(t["slots"]),
                      Str(t["priority"]),
                      t.contains("agents") ? absl::StrJoin(t["agents"].get<std::vector<std::string>>(), ",") : "-",
                      t.contains("reason") ? Str(t["reason"]) : "-"});
    }
    PrintTable(std::cout, {"trial", "experiment", "state", "slots", "priority", "agents", "reason"}, rows);
    return kExitOk;
  });

  // agent list|enable|disable
  CLI::App* agent = root->add_subcommand("agent", "Agents (machines running trials)");
  agent->alias("a");
  agent->require_subcommand(1);
  CLI::App* alist = agent->add_subcommand("list", "Every agent with its slots");
  alist->alias("ls");
  add_json(alist);
  run(alist, [common] {
    absl::StatusOr<Json> r = common->Client().Get("/api/v1/agents");
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const Json& a : (*r)["agents"]) {
      rows.push_back({Str(a["id"]), Str(a["host"]), Str(a["slots"]), Str(a["used"]),
                      a["enabled"].get<bool>() ? "yes" : "no", a["connected"].get<bool>() ? "yes" : "no"});
    }
    PrintTable(std::cout, {"id", "host", "slots", "used", "enabled", "connected"}, rows);
    return kExitOk;
  });
  for (const char* verb : {"enable", "disable"}) {
    auto agent_id = std::make_shared<std::string>();
    CLI::App* sub = agent->add_subcommand(verb, std::string(verb) + " an agent (a disabled agent takes no new trials)");
    sub->add_option("id", *agent_id, "Agent id")->required();
    run(sub, [common, agent_id, v = std::string(verb)] {
      absl::StatusOr<Json> r = common->Client().Post(absl::StrCat("/api/v1/agents/", *agent_id, "/", v));
      if (!r.ok()) return Fail(r.status());
      std::cout << "agent " << *agent_id << ": " << v << "d\n";
      return kExitOk;
    });
  }

  // slot list
  CLI::App* slot = root->add_subcommand("slot", "Slots");
  slot->alias("s");
  slot->require_subcommand(1);
  CLI::App* slist = slot->add_subcommand("list", "Every slot of every agent and what runs on it");
  slist->alias("ls");
  add_json(slist);
  run(slist, [common] {
    absl::StatusOr<Json> r = common->Client().Get("/api/v1/slots");
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const Json& s : (*r)["slots"]) {
      rows.push_back({Str(s["agent"]), Str(s["slot"]), s["enabled"].get<bool>() ? "yes" : "no",
                      s.contains("trial_id") ? Str(s["trial_id"]) : "-",
                      s.contains("allocation") ? Str(s["allocation"]) : "-"});
    }
    PrintTable(std::cout, {"agent", "slot", "enabled", "trial", "allocation"}, rows);
    return kExitOk;
  });

  // template list|set|describe|remove
  CLI::App* tpl = root->add_subcommand("template", "Configuration templates");
  tpl->alias("tpl");
  tpl->require_subcommand(1);
  auto details = std::make_shared<bool>(false);
  CLI::App* tlist2 = tpl->add_subcommand("list", "List templates");
  tlist2->alias("ls");
  tlist2->add_flag("-d,--details", *details, "Show each template's config");
  add_json(tlist2);
  run(tlist2, [common, details] {
    absl::StatusOr<Json> r = common->Client().Get("/api/v1/templates");
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    if (*details) {
      for (const Json& t : (*r)["templates"]) std::cout << "--- " << Str(t["name"]) << "\n" << Str(t["config"]) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const Json& t : (*r)["templates"]) rows.push_back({Str(t["name"])});
    PrintTable(std::cout, {"name"}, rows);
    return kExitOk;
  });
  auto name = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>();
  CLI::App* set = tpl->add_subcommand("set", "Create or replace a template from a YAML file");
  set->add_option("name", *name, "Template name")->required();
  set->add_option("file", *file, "Template file (YAML)")->required()->check(CLI::ExistingFile);
  set->footer("Example:\n  cohort template set team team.yaml\n"
              "  cohort experiment create --template team exp.yaml CONTEXT_DIR");
  run(set, [common, name, file] {
    absl::StatusOr<Json> r = common->Client().Put(absl::StrCat("/api/v1/templates/", *name), ReadFile(*file), "application/yaml");
    if (!r.ok()) return Fail(r.status());
    std::cout << "template " << *name << " set\n";
    return kExitOk;
  });
  CLI::App* tdesc = tpl->add_subcommand("describe", "Print a template");
  tdesc->add_option("name", *name, "Template name")->required();
  add_json(tdesc);
  run(tdesc, [common, name] {
    absl::StatusOr<Json> r = common->Client().Get(absl::StrCat("/api/v1/templates/", *name));
    if (!r.ok()) return Fail(r.status());
    if (common->json) return std::cout << r->dump(2) << "\n", kExitOk;
    std::cout << Str((*r)["config"]);
    return kExitOk;
  });
  CLI::App* remove = tpl->add_subcommand("remove", "Delete a template");
  remove->alias("rm");
  remove->add_option("name", *name, "Template name")->required();
  run(remove, [common, name] {
    absl::StatusOr<Json> r = common->Client().Delete(absl::StrCat("/api/v1/templates/", *name));
    if (!r.ok()) return Fail(r.status());
    std::cout << "template " << *name << " removed\n";
    return kExitOk;
  });

  AddClusterUpDown(root, exit_code);
}

int RunCreateRemote(const std::string& master_flag, const std::string& config_path,
                    const std::string& context_dir, const std::string& template_name, bool follow) {
  std::ifstream in(config_path);
  if (!in) {
    std::cerr << "cohort: error: cannot read the config " << config_path << "\n";
    return kExitUsage;
  }
  std::stringstream config;
  config << in.rdbuf();
  absl::StatusOr<std::string> context = PackContext(context_dir);
  if (!context.ok()) {
    std::cerr << "cohort: error: " << context.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<client::FormPart> parts = {{"config", config.str(), "config.yaml", "application/yaml"},
                                      {"context", *context, "context.tar.gz", "application/gzip"}};
  if (!template_name.empty()) parts.push_back({"template", template_name, "", "text/plain"});
  MasterClient client(client::MasterUrl(master_flag), absl::Seconds(120));
  absl::StatusOr<Json> r = client.PostForm("/api/v1/experiments", parts);
  if (!r.ok()) {
    std::cerr << "cohort: error: " << config_path << ": " << r.status().message() << "\n";
    return kExitInvalid;
  }
  const int64_t id = (*r)["id"].get<int64_t>();
  std::cout << "created experiment " << id << "\n";
  if (!follow) return kExitOk;
  Common c;
  c.master_flag = &master_flag;
  return Follow(c, id);
}

}  // namespace cohort::cli
