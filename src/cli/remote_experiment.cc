#include "cli/remote_experiment.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/command_context.h"
#include "cli/config_overrides.h"
#include "cli/context_filter.h"
#include "cli/exit_codes.h"
#include "cli/login_store.h"
#include "cli/progress_meter.h"
#include "client/master_client.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/terminal_text.h"
#include "config/config_parser.h"
#include "config/creation_check.h"
#include "config/error_list.h"
#include "config/yaml_json.h"
#include "wire/experiment_bodies.h"
#include "wire/limits.h"
#include "wire/series_bodies.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

// The context directory as tar.gz bytes (packed with libarchive): "./" and what ContextEntries
// keeps of it (everything but what its .detignore leaves out), as "./PATH".
absl::StatusOr<std::string> PackContext(const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> entries = ContextEntries(dir);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<std::string> bytes = cohort::PackContext(dir, *entries);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() > wire::kMaxContextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context directory ", dir, " packs to ", bytes->size() >> 20,
        " MB; the master takes at most ", wire::kMaxContextBytes >> 20,
        " MB: leave files out with a .detignore file in it (gitignore patterns, one per line), "
        "or move data out of it (trials can read it from a path in the config's `data` "
        "section)"));
  }
  return bytes;
}

// What --follow remembers of each trial between polls.
struct FollowedTrials {
  std::map<int64_t, std::unique_ptr<ProgressMeter>> meters;
  std::map<int64_t, wire::TrialState> last_state;
};

// " (why it waits)", or "" when it does not.
std::string WaitingSuffix(const wire::TrialDescription& t) {
  return t.waiting_reason ? absl::StrCat(" (", *t.waiting_reason, ")") : "";
}

// Feeds trial `t` to its meter, prints "trial N: STATE" on stderr when its state changed since
// the last poll, and returns its progress line.
std::string TrackTrial(const wire::TrialDescription& t, bool tty, FollowedTrials* followed) {
  auto& meter = followed->meters[t.id];
  if (!meter) meter = std::make_unique<ProgressMeter>(absl::StrCat("trial ", t.id), 0);
  if (t.total_batches > 0) {
    meter->Update({.completed = static_cast<double>(t.batches),
                   .total = static_cast<double>(t.total_batches)},
                  absl::Now());
  }
  std::string line = meter->has_snapshot() ? meter->Line() : absl::StrCat("trial ", t.id);
  absl::StrAppend(&line, "  ", wire::Name(t.state), WaitingSuffix(t));
  auto last = followed->last_state.find(t.id);
  if (last == followed->last_state.end() || last->second != t.state) {
    if (tty) std::cerr << "\r\x1b[K";
    std::cerr << "trial " << t.id << ": " << wire::Name(t.state) << WaitingSuffix(t) << "\n";
    followed->last_state[t.id] = t.state;
  }
  return line;
}

// "validation/accuracy 0.9076, validation/loss 0.25 (batch 2000)": the trial's final
// validation metrics, or empty when it reported none (or they cannot be read).
std::string FinalValidation(client::MasterClient& client, int64_t trial_id) {
  absl::StatusOr<wire::SeriesList> list =
      GetAs(client, absl::StrCat("/api/v1/trials/", trial_id, "/series"), wire::ParseSeriesList);
  if (!list.ok()) return "";
  std::vector<std::string> parts;
  int64_t batch = 0;
  for (const wire::SeriesSummary& s : list->series) {
    if (!absl::StartsWith(s.name, "validation/") || s.points == 0) continue;
    parts.push_back(absl::StrCat(s.name, " ", Cell(std::optional<double>(s.last_value))));
    batch = std::max(batch, s.last_batch);
  }
  if (parts.empty()) return "";
  return absl::StrCat(absl::StrJoin(parts, ", "), " (batch ", batch, ")");
}

// Prints how experiment `e` ended, each trial's final validation metrics, each failed trial's
// last lines and where to look next; returns the exit code.
int FinishFollow(client::MasterClient& client, const wire::ExperimentDescription& e, bool tty) {
  if (tty) std::cerr << "\n";
  std::cout << "experiment " << e.id << " " << wire::Name(e.state) << "\n";
  // One request per trial: a search of thousands of trials shows its first ones here.
  constexpr size_t kMaxSummarized = 20;
  for (size_t i = 0; i < e.trials.size(); ++i) {
    const wire::TrialDescription& t = e.trials[i];
    if (i < kMaxSummarized) {
      const std::string validation = FinalValidation(client, t.id);
      if (!validation.empty()) std::cout << "trial " << t.id << ": " << validation << "\n";
    } else if (i == kMaxSummarized) {
      std::cout << "(" << e.trials.size() - kMaxSummarized
                << " more trials: cohort experiment describe " << e.id << ")\n";
    }
    if (t.error_lines) {
      std::cout << "trial " << t.id << " failed; its last lines:\n"
                << EscapeControl(*t.error_lines, /*keep_newlines=*/true) << "\n";
    }
  }
  if (!e.trials.empty()) {
    const int64_t first = e.trials.front().id;
    std::cout << "next: cohort trial metrics " << first << "  |  cohort trial profile " << first
              << "  |  cohort trial logs " << first << "  |  cohort experiment describe " << e.id
              << "\n";
  }
  return e.state == wire::ExperimentState::kCompleted ? kExitOk : kExitInvalid;
}

// Prints the trials' progress until the experiment ends; returns the exit code.
int Follow(client::MasterClient client, int64_t id) {
  const std::string path = absl::StrCat("/api/v1/experiments/", id);
  FollowedTrials followed;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  absl::Time last_print = absl::InfinitePast();
  while (true) {
    absl::StatusOr<wire::ExperimentDescription> e =
        GetAs(client, path, wire::ParseExperimentDescription);
    if (!e.ok()) return Fail(e.status());
    std::vector<std::string> lines;
    for (const wire::TrialDescription& t : e->trials)
      lines.push_back(TrackTrial(t, tty, &followed));
    const bool done = wire::IsTerminal(e->state);
    if (tty) {
      std::cerr << "\r\x1b[K" << absl::StrJoin(lines, " | ") << std::flush;
    } else if (absl::Now() - last_print > absl::Seconds(10) || done) {
      for (const std::string& l : lines) std::cerr << l << "\n";
      last_print = absl::Now();
    }
    if (done) return FinishFollow(client, *e, tty);
    absl::SleepFor(absl::Seconds(1));
  }
}

// Checks a config that validates without a template before it is uploaded: prints its
// warnings (the fields the cluster will ignore; *warned is then true) and returns false after
// printing why when Cohort cannot run it (config::CheckRunnable, as the master would answer). A
// config with a template, or an invalid one, is left to the master, which holds the templates,
// reports every error and sends the merged config's warnings back.
bool CheckBeforeUpload(const std::string& config_path, const std::string& text,
                       const std::string& template_name, bool* warned) {
  if (!template_name.empty()) return true;
  absl::StatusOr<Json> tree = config::ParseYaml(text);
  if (!tree.ok() || !tree->is_object() || tree->contains("template")) return true;
  absl::StatusOr<config::ExperimentConfig> parsed =
      config::ParseExperimentConfig(*tree, {.seed_if_absent = 0});
  if (!parsed.ok()) return true;
  *warned = true;
  for (const std::string& warning : parsed->warnings) {
    std::cerr << config_path << ": warning: " << warning << "\n";
  }
  const absl::Status runnable = config::CheckRunnable(*parsed);
  for (const std::string& line : config::ConfigErrors(runnable)) {
    std::cerr << config_path << ": " << line << "\n";
  }
  return runnable.ok();
}

// The config file's text rewritten with the overrides and --test; nullopt after printing why
// (*exit_code: kExitInvalid for text that is not a YAML mapping, kExitUsage for a bad override).
std::optional<std::string> Rewritten(const CreateRemoteArgs& args, const std::string& text,
                                     int* exit_code) {
  absl::StatusOr<config::Json> tree = config::ParseYaml(text);
  if (!tree.ok() || !tree->is_object()) {
    std::cerr << args.config_path << ": "
              << (tree.ok() ? "expected a mapping of config fields" : tree.status().message())
              << "\n";
    *exit_code = kExitInvalid;
    return std::nullopt;
  }
  if (absl::Status set = ApplyConfigOverrides(args.overrides, *tree); !set.ok()) {
    std::cerr << "cohort: error: " << set.message() << "\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  if (args.test) ApplySmokeTest(*tree);
  return config::ToYaml(*tree);
}

}  // namespace

int RunCreateRemote(const CommandContext& command, const CreateRemoteArgs& args) {
  const std::string& config_path = args.config_path;
  absl::StatusOr<std::string> text = config::ReadYamlText(config_path);
  if (!text.ok()) return FailReading(text.status(), "the config");
  if (!args.overrides.empty() || args.test) {
    int exit_code = kExitOk;
    std::optional<std::string> rewritten = Rewritten(args, *text, &exit_code);
    if (!rewritten) return exit_code;
    *text = *std::move(rewritten);
  }
  bool warned = false;
  if (!CheckBeforeUpload(config_path, *text, args.template_name, &warned)) return kExitInvalid;
  absl::StatusOr<std::string> context = PackContext(args.context_dir);
  if (!context.ok()) {
    std::cerr << "cohort: error: " << context.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<client::FormPart> parts = {
      {"config", *text, "config.yaml", "application/yaml"},
      {"context", *context, "context.tar.gz", "application/gzip"}};
  if (!args.template_name.empty()) {
    parts.push_back({"template", args.template_name, "", "text/plain"});
  }
  client::MasterClient client = command.Client(absl::Seconds(120));
  absl::StatusOr<Json> r = client.PostForm("/api/v1/experiments", parts);
  if (!r.ok()) {
    std::cerr << "cohort: error: " << config_path << ": " << r.status().message() << "\n";
    return kExitInvalid;
  }
  absl::StatusOr<wire::CreatedExperiment> created =
      ParseAnswer("POST /api/v1/experiments", r, wire::ParseCreatedExperiment);
  if (!created.ok()) return Fail(created.status());
  if (!warned) {  // merged with a template on the master: its warnings are the master's
    for (const std::string& w : created->warnings) {
      std::cerr << config_path << ": warning: " << w << "\n";
    }
  }
  std::cout << "created experiment " << created->id << (args.test ? " (smoke test)" : "") << "\n";
  if (!args.follow) return kExitOk;
  return Follow(command.Client(), created->id);
}

namespace {

// The config a fork submits: none (the master takes the parent's), else `config_file` or the
// parent's effective config, with `overrides` applied.
absl::StatusOr<std::optional<std::string>> ForkConfig(client::MasterClient& client, int64_t parent,
                                                      const std::string& config_file,
                                                      const std::vector<std::string>& overrides) {
  if (config_file.empty() && overrides.empty()) return std::optional<std::string>();
  config::Json tree;
  if (!config_file.empty()) {
    COHORT_ASSIGN_OR_RETURN(tree, config::LoadYamlFile(config_file));
  } else {
    COHORT_ASSIGN_OR_RETURN(wire::ExperimentDescription e,
                            GetAs(client, absl::StrCat("/api/v1/experiments/", parent),
                                  wire::ParseExperimentDescription));
    COHORT_ASSIGN_OR_RETURN(tree, config::ParseYaml(e.config));
  }
  COHORT_RETURN_IF_ERROR(ApplyConfigOverrides(overrides, tree));
  return std::optional<std::string>(config::ToYaml(tree));
}

}  // namespace

void AddConfigChangeOptions(CLI::App* verb, ConfigChangeArgs* args, const std::string& file_help) {
  verb->add_option("--config-file", args->config_file, file_help)->check(CLI::ExistingFile);
  verb->add_option("--config", args->overrides,
                   "KEY=VALUE: set one field (dotted path; VALUE is YAML); repeatable");
  verb->add_flag("-f,--follow", args->follow, "Show each trial's progress until it ends");
}

int RunFork(const CommandContext& command, const ConfigChangeArgs& args) {
  client::MasterClient client = command.Client(absl::Seconds(120));
  absl::StatusOr<std::optional<std::string>> config =
      ForkConfig(client, args.id, args.config_file, args.overrides);
  if (!config.ok()) return Fail(config.status());
  std::vector<client::FormPart> parts = {{"parent", absl::StrCat(args.id), "", "text/plain"}};
  if (*config) parts.push_back({"config", **config, "config.yaml", "application/yaml"});
  absl::StatusOr<Json> r = client.PostForm("/api/v1/experiments", parts);
  if (!r.ok()) {
    std::cerr << "cohort: error: forking experiment " << args.id << ": " << r.status().message()
              << "\n";
    return kExitInvalid;
  }
  absl::StatusOr<wire::CreatedExperiment> created =
      ParseAnswer("POST /api/v1/experiments", r, wire::ParseCreatedExperiment);
  if (!created.ok()) return Fail(created.status());
  for (const std::string& w : created->warnings) std::cerr << "warning: " << w << "\n";
  std::cout << "created experiment " << created->id << " (a fork of experiment " << args.id
            << ")\n";
  if (!args.follow) return kExitOk;
  return Follow(command.Client(), created->id);
}

int RunContinue(const CommandContext& command, const ConfigChangeArgs& args) {
  config::Json changes = config::Json::object();
  if (!args.config_file.empty()) {
    absl::StatusOr<config::Json> file = config::LoadYamlFile(args.config_file);
    if (!file.ok()) return FailReading(file.status(), "the config file");
    if (!file->is_object()) {
      std::cerr << "cohort: error: " << args.config_file
                << ": expected a mapping of the config fields to change\n";
      return kExitUsage;
    }
    changes = *std::move(file);
  }
  if (absl::Status set = ApplyConfigOverrides(args.overrides, changes); !set.ok()) {
    std::cerr << "cohort: error: " << set.message() << "\n";
    return kExitUsage;
  }
  client::MasterClient client = command.Client(absl::Seconds(60));
  absl::StatusOr<Json> r = client.Post(absl::StrCat("/api/v1/experiments/", args.id, "/continue"),
                                       wire::ExperimentContinue{changes}.ToJson());
  if (!r.ok()) {
    std::cerr << "cohort: error: continuing experiment " << args.id << ": " << r.status().message()
              << "\n";
    return kExitInvalid;
  }
  absl::StatusOr<wire::CreatedExperiment> continued =
      ParseAnswer("POST /api/v1/experiments/ID/continue", r, wire::ParseCreatedExperiment);
  if (!continued.ok()) return Fail(continued.status());
  for (const std::string& w : continued->warnings) std::cerr << "warning: " << w << "\n";
  if (command.json() && !args.follow) return PrintJson(continued->ToJson());
  std::cout << "experiment " << args.id << " continues\n";
  if (!args.follow) return kExitOk;
  return Follow(command.Client(), args.id);
}

int WaitForExperiment(const CommandContext& command, int64_t id) {
  return Follow(command.Client(), id);
}

}  // namespace cohort::cli
