#pragma once
// `cohort experiment create --local CONFIG CONTEXT_DIR [--test]`: runs an experiment on this
// machine without a master. The config is validated (and merged under --template); the
// master's searcher (master/searcher) creates the trials (single: one; grid: every point;
// random and adaptive_asha: max_trials) and decides, as on a cluster, which ones adaptive_asha
// stops at a rung and, without stop_once, promotes again later (the trial resumes from its
// latest checkpoint after the one running finishes). Trial states move through the master's
// lifecycle (master/experiments/lifecycle.h). Trials run one at a time, each through
// cohort-launch with `resources.slots_per_trial` workers
// running the config's entrypoint inside CONTEXT_DIR with the worker environment
// (COHORT_CONFIG, COHORT_RUN_DIR, COHORT_HPARAMS, COHORT_TRIAL_SEED, COHORT_TRIAL_ID and the
// config's environment_variables).
//
// Everything lands in <runs dir>/<name>-<time>/: config.yaml (the effective config) and per
// trial trial-<id>/ with output.log (every line of every worker, rank-prefixed), metrics.jsonl,
// progress.json and checkpoints/. While a trial runs a live progress line shows batches done of
// total, loss, samples/s and ETA; validations are printed as they arrive; a summary table ends
// the run. A failed trial restarts from its latest checkpoint up to max_restarts times, then
// its last output lines are printed. Ctrl-C (or SIGTERM) asks the trial to checkpoint and stop
// (preemption); a second Ctrl-C kills it.
//
// --test: a smoke test: the first trial only, searcher.max_length cut to 10 batches (fewer if
// the config asks fewer), validation and a checkpoint only at the end.
// Thread-compatible; installs SIGINT/SIGTERM handlers while it runs.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace cohort::cli {

struct CreateLocalArgs {
  std::string config_path;
  std::string context_dir;
  std::optional<std::string> template_path;
  std::vector<std::string> overrides;  // --config KEY=VALUE (config_overrides.h)
  bool test = false;
  std::string runs_dir = "cohort-runs";
  // cohort-launch; empty: the one next to this executable, else from PATH.
  std::string launcher;
  // The live line: rewritten in place (a terminal) or printed every few seconds (a log).
  std::optional<bool> interactive;  // nullopt: whether `err` is a terminal
};

// Returns the exit status: 0 every trial completed; 1 a trial failed or was stopped; 2 bad
// arguments (missing context directory or entrypoint, unreadable config) or invalid config.
int RunCreateLocal(const CreateLocalArgs& args, std::ostream& out, std::ostream& err);

}  // namespace cohort::cli
