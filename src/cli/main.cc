// cohort: the command-line client. Argument parsing only; each noun's *_commands.h registers
// its verbs (in this order, which is the order `cohort --help` lists them) and does its work in
// its own files.

#include <signal.h>

#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/agent_commands.h"
#include "cli/checkpoint_commands.h"
#include "cli/cluster_commands.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/experiment_commands.h"
#include "cli/job_commands.h"
#include "cli/task_commands.h"
#include "cli/model_commands.h"
#include "cli/template_commands.h"
#include "cli/webhook_commands.h"
#include "cli/trial_commands.h"
#include "cli/user_commands.h"
#include "common/command_line.h"

static_assert(cohort::cli::kExitUsage == cohort::kUsageExit, "one usage-error status everywhere");

namespace {

constexpr char kDescription[] = "cohort: distributed training for C++/LibTorch.\n";
constexpr char kUsage[] =
    "cohort [OPTIONS] COMMAND VERB [ARGS...]   (cohort COMMAND VERB --help for details)";

constexpr char kFooter[] =
    "Examples:\n"
    "  cohort experiment validate examples/fashion_mnist/const.yaml\n"
    "  cohort experiment create --local examples/fashion_mnist/distributed.yaml build/bin\n"
    "  cohort cluster up --agents 2 --slots 1      (and logs this CLI in as admin)\n"
    "  cohort user login alice;  cohort user whoami\n"
    "  cohort experiment create --follow examples/fashion_mnist/distributed.yaml "
    "build/contexts/fashion_mnist\n"
    "  cohort experiment list;  cohort trial logs 1 --rank 0;  cohort task list\n"
    "  cohort experiment trials 1;  cohort trial compare 3 7 9\n"
    "\n"
    "Exit status: 0 success; 1 the command failed (e.g. an invalid config); 2 bad arguments.";

}  // namespace

int main(int argc, char** argv) {
  // A master that closes the connection during an upload (a refused request) is an error the
  // command reports, not a signal that ends it silently (cpp-httplib writes without
  // MSG_NOSIGNAL). What the CLI starts gets the default back (Subprocess).
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app(kDescription, "cohort");
  cohort::SetUsage(app, kUsage);
  app.require_subcommand(1);
  int exit_code = cohort::cli::kExitOk;
  std::string master, tls_ca;
  app.add_option("-m,--master", master,
                 "Master URL (default: $COHORT_MASTER, else the local cluster's, else "
                 "http://127.0.0.1:8080)");
  app.add_option("--tls-ca", tls_ca,
                 "CA certificates (PEM) that an https:// master's certificate must chain to "
                 "(default: $COHORT_TLS_CA, else the system's store)");
  app.fallthrough();
  cohort::cli::CommandContext context(&master, &tls_ca, &exit_code);
  cohort::cli::AddExperimentCommands(&app, &context);
  cohort::cli::AddTrialCommands(&app, &context);
  cohort::cli::AddTaskCommands(&app, &context);
  cohort::cli::AddJobCommands(&app, &context);
  cohort::cli::AddAgentCommands(&app, &context);
  cohort::cli::AddTemplateCommands(&app, &context);
  cohort::cli::AddModelCommands(&app, &context);
  cohort::cli::AddWebhookCommands(&app, &context);
  cohort::cli::AddCheckpointCommands(&app, &context);
  cohort::cli::AddUserCommands(&app, &context);
  cohort::cli::AddClusterCommands(&app, &context);
  app.footer(kFooter);  // after the verbs: CLI11 copies a parent's footer into new subcommands
  if (argc == 1) {      // bare `cohort`: the overview, on stderr, as a usage error
    std::fprintf(stderr, "%s", app.help().c_str());
    return cohort::cli::kExitUsage;
  }
  if (std::optional<int> exit = cohort::ParseCommandLine(app, "cohort", argc, argv)) return *exit;
  return exit_code;
}
