// cohort-launch: starts this machine's workers of a (possibly multi-node) training job.
// Argument parsing only; the work is done by launch::Launcher.

#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/net.h"
#include "launch/launcher.h"
#include "wire/launch_env.h"

namespace {

constexpr char kDescription[] =
    "cohort-launch: run a distributed training job's workers on this machine.\n"
    "\n"
    "Starts --slots worker processes running COMMAND, each with the Cohort worker environment\n"
    "(COHORT_RANK, COHORT_SIZE, COHORT_LOCAL_RANK, COHORT_LOCAL_SIZE, COHORT_CROSS_RANK,\n"
    "COHORT_CROSS_SIZE, COHORT_CHIEF_ADDR, COHORT_RENDEZVOUS_PORT, COHORT_LAUNCHER=1) and\n"
    "OMP/OPENBLAS/MKL/COHORT_NUM_THREADS = cores / slots unless already set. Node 0 hosts the\n"
    "job's rendezvous store. Every line a worker prints is prefixed with [rank=K].\n"
    "If a worker fails, the others get SIGTERM, then SIGKILL after --grace-period, and\n"
    "cohort-launch exits with the failed worker's status (128+N for signal N).\n"
    "SIGINT/SIGTERM are forwarded to the workers.\n";

constexpr char kExamples[] =
    "Examples:\n"
    "  # 4 workers on this machine:\n"
    "  cohort-launch --slots 4 -- ./my_trial --epochs 3\n"
    "\n"
    "  # 2 machines with 8 workers each (16 ranks); node 0 is 10.0.0.5:\n"
    "  node0$ cohort-launch --slots 8 --nnodes 2 --node-rank 0 --chief-addr 10.0.0.5 -- ./t\n"
    "  node1$ cohort-launch --slots 8 --nnodes 2 --node-rank 1 --chief-addr 10.0.0.5 -- ./t\n"
    "\n"
    "  # 2 workers on GPUs 0 and 1 (each sees its GPU only, as device 0):\n"
    "  cohort-launch --slots 2 --gpus 0,1 -- ./my_trial\n"
    "\n"
    "Exit status: 0 when every worker exits 0; a failed worker's status; 128+N when stopped by\n"
    "signal N; 2 for bad arguments.";

int UsageError(const std::string& message) { return cohort::UsageError("cohort-launch", message); }

// The command line split at the first "--": everything after it is the worker command, taken
// verbatim.
struct SplitArgs {
  std::vector<std::string> own_args;
  std::vector<std::string> command;
  bool saw_separator = false;
};

SplitArgs SplitAtSeparator(int argc, char** argv) {
  SplitArgs args;
  for (int i = 1; i < argc; ++i) {
    if (!args.saw_separator && std::string(argv[i]) == "--") {
      args.saw_separator = true;
      continue;
    }
    (args.saw_separator ? args.command : args.own_args).push_back(argv[i]);
  }
  return args;
}

// The flags as given; FinishOptions turns the last three into LaunchOptions fields.
struct Flags {
  cohort::launch::LaunchOptions options;
  std::string chief_addr;
  int rendezvous_port = -1;
  double grace_seconds = 3.0;
  std::string gpus;
};

void AddFlags(CLI::App* app, Flags* flags) {
  app->add_option("--slots,-n", flags->options.slots, "Workers to start on this machine (>= 1)")
      ->required();
  app->add_option("--nnodes", flags->options.nnodes, "Machines in the job (default 1)");
  app->add_option("--node-rank", flags->options.node_rank,
                  "Index of this machine, 0 .. nnodes-1 (default 0); node 0 hosts the store");
  app->add_option("--chief-addr", flags->chief_addr,
                  "HOST[:PORT] of node 0 as the other nodes reach it (required with --nnodes > 1;"
                  " default port 29400; single node default: 127.0.0.1 and a free port)");
  app->add_option("--rendezvous-port", flags->rendezvous_port,
                  "Rendezvous store port (overrides the port of --chief-addr; 0: node 0 picks a"
                  " free one and prints it)");
  app->add_option("--job-id", flags->options.job_id,
                  "Multi-node: the job's name, written to node 0's store; the other nodes take "
                  "only a store holding it (an earlier job may still hold the port)");
  app->add_option("--gpus", flags->gpus,
                  "GPU slots: one GPU id per slot, e.g. 0,1; the worker of local rank i gets "
                  "CUDA_VISIBLE_DEVICES=<i-th id> (default: CPU slots, CUDA_VISIBLE_DEVICES "
                  "passed through)");
  app->add_option("--grace-period", flags->grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when stopping workers (default 3)");
}

// Sets the chief host, rendezvous port, grace period and GPUs of flags->options from
// --chief-addr, --rendezvous-port, --grace-period and --gpus. InvalidArgument (the message for
// the user) when --chief-addr does not parse, names another port than --rendezvous-port, the
// grace period is negative or --gpus is not a list of distinct ids.
absl::Status FinishOptions(Flags* flags) {
  int rendezvous_port = flags->rendezvous_port;
  if (!flags->chief_addr.empty()) {
    auto parsed = cohort::net::ParseHostPort(flags->chief_addr, -1);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--chief-addr: ", parsed.status().message()));
    }
    flags->options.chief_host = parsed->host;
    if (rendezvous_port >= 0 && parsed->port >= 0 && rendezvous_port != parsed->port) {
      return absl::InvalidArgumentError(absl::StrCat("--chief-addr names port ", parsed->port,
                                                     " but --rendezvous-port says ",
                                                     rendezvous_port, "; give only one"));
    }
    if (rendezvous_port < 0) rendezvous_port = parsed->port;
  }
  if (flags->grace_seconds < 0) {
    return absl::InvalidArgumentError("--grace-period must not be negative");
  }
  absl::StatusOr<std::vector<int>> gpus = cohort::wire::ParseGpuList("--gpus", flags->gpus);
  if (!gpus.ok()) return gpus.status();
  flags->options.gpus = *std::move(gpus);
  flags->options.rendezvous_port = rendezvous_port;
  flags->options.grace_period = absl::Seconds(flags->grace_seconds);
  return absl::OkStatus();
}

// Creates the launcher and runs the job; returns the exit status (2 for options or a command
// the launcher rejects, 1 when the store cannot be set up).
int Launch(cohort::launch::LaunchOptions options) {
  auto launcher = cohort::launch::Launcher::Create(std::move(options));
  if (!launcher.ok()) {
    const absl::Status& status = launcher.status();
    if (absl::IsInvalidArgument(status) || absl::IsNotFound(status) ||
        absl::IsPermissionDenied(status)) {
      return UsageError(std::string(status.message()));
    }
    std::fprintf(stderr, "cohort-launch: error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return (*launcher)->Run();
}

}  // namespace

int main(int argc, char** argv) {
  SplitArgs args = SplitAtSeparator(argc, argv);
  Flags flags;
  CLI::App app(kDescription, "cohort-launch");
  cohort::SetUsage(app,
                   "cohort-launch --slots N [--nnodes M --node-rank R --chief-addr HOST[:PORT]]\n"
                   "                     [OPTIONS] -- COMMAND [ARGS...]");
  app.footer(kExamples);
  AddFlags(&app, &flags);

  // CLI11 takes the arguments without the program name, in reverse order.
  std::vector<std::string> reversed(args.own_args.rbegin(), args.own_args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    return UsageError(absl::StrCat(e.what(),
                                   " (is it the worker command? put it after '--', e.g. "
                                   "cohort-launch --slots 2 -- ./my_trial)"));
  } catch (const CLI::ParseError& e) {
    return UsageError(e.what());
  }
  if (!args.saw_separator) {
    return UsageError(
        "missing '--' before the worker command, e.g. cohort-launch --slots 2 -- ./my_trial");
  }
  if (args.command.empty()) {
    return UsageError("no worker command after '--', e.g. cohort-launch --slots 2 -- ./my_trial");
  }
  if (absl::Status finished = FinishOptions(&flags); !finished.ok()) {
    return UsageError(std::string(finished.message()));
  }
  flags.options.command = std::move(args.command);
  return Launch(std::move(flags.options));
}
