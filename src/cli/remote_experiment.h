#pragma once
// `cohort experiment create CONFIG CONTEXT_DIR [--template T] [--config K=V] [--test] [--follow]`
// against a master (the counterpart of local_experiment.h's --local): packs the context
// directory (honouring its .detignore), submits it with the config, prints the new experiment's
// id and, with --follow, shows each trial's progress until the experiment ends.
// Thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/command_context.h"

namespace cohort::cli {

// What `experiment create` without --local takes.
struct CreateRemoteArgs {
  std::string config_path;
  std::string context_dir;
  std::string template_name;           // empty: none; else a template stored on the master
  std::vector<std::string> overrides;  // --config KEY=VALUE, set in the config file's fields
  bool test = false;                   // --test: config_overrides.h's ApplySmokeTest
  bool follow = false;
};

// `command` makes the master's clients (the root's --master and --tls-ca). The context
// directory is packed as tar.gz, at most wire::kMaxContextBytes (96 MB), without what its
// `.detignore` leaves out (context_filter.h). With overrides or `test` the config file is
// rewritten before it is sent (the template, merged by the master, stays under it). Returns the
// exit status: 2 when the config is unreadable, an override is bad or the context directory is
// missing, too large or cannot be packed; 1 when the master rejects the experiment (its errors
// on stderr, after the config's path) or its answer does not parse, or a --follow poll fails;
// else 0, or with `follow` 0 only when the experiment COMPLETED (1 otherwise, with each failed
// trial's last lines).
int RunCreateRemote(const CommandContext& command, const CreateRemoteArgs& args);

// What `experiment fork` and `experiment continue` take: an existing experiment and the changes
// to its config (AddConfigChangeOptions adds the options).
struct ConfigChangeArgs {
  int64_t id = 0;                      // the experiment forked or continued
  std::string config_file;             // empty: none
  std::vector<std::string> overrides;  // KEY=VALUE (config_overrides.h)
  bool follow = false;
};
// Adds --config-file (described by `file_help`), --config and -f/--follow to `verb`.
void AddConfigChangeOptions(CLI::App* verb, ConfigChangeArgs* args, const std::string& file_help);

// `cohort experiment fork ID [--config-file F] [--config KEY=VALUE]... [--follow]` (Determined's
// `det experiment fork`): a new experiment with the parent's context (the master copies it) and
// the parent's effective config (its template merged, its experiment_seed kept: the same
// hyperparameter draws), or the config file (instead of it), each --config applied on top. Only
// the parent's owner or an admin may fork it. Exit status as RunCreateRemote's.
int RunFork(const CommandContext& command, const ConfigChangeArgs& args);

// `cohort experiment continue ID [--config-file F] [--config KEY=VALUE]... [--follow]`
// (Determined's `det experiment continue`): the ended experiment trains again under its id,
// each trial from its latest checkpoint; the file (a partial config) and then each --config are
// merged over its effective config. Only the owner or an admin may. Exit status as
// RunCreateRemote's (2 for an unreadable file or a bad --config).
int RunContinue(const CommandContext& command, const ConfigChangeArgs& args);

// `cohort experiment wait ID` (Determined's `det experiment wait`): follows an experiment
// created earlier as --follow does (progress on stderr; at the end its state, each trial's
// final validation and each failed trial's last lines on stdout) until it ends. Returns 0 only
// when it COMPLETED; 1 when it ended otherwise or a poll fails (an unknown id, no master).
int WaitForExperiment(const CommandContext& command, int64_t id);

}  // namespace cohort::cli
