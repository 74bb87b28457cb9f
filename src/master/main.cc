// cohort-master: the cluster's REST API, database and scheduler (docs/design/0006-cluster.md).

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "CLI/CLI.hpp"
#include "client/local_cluster.h"
#include "master/db/database.h"
#include "master/http/agent_secret_authenticator.h"
#include "master/http/routes.h"
#include "master/master.h"

namespace {

httplib::Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->stop();
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string data_dir = (std::filesystem::path(cohort::client::LocalClusterDir()) / "master").string();
  std::string db_path;
  double agent_timeout = 30;
  std::string secret_file;
  CLI::App app{"cohort-master: the Cohort cluster's REST API (/api/v1), database (SQLite) and "
               "gang scheduler. Agents (cohort-agent) connect to it; the cohort CLI talks to it."};
  app.add_option("--host", host, "Address to listen on (default 127.0.0.1; 0.0.0.0 for all)");
  app.add_option("--port", port, "Port (default 8080; 0 picks a free one and prints it)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--data-dir", data_dir,
                 "Where contexts and default checkpoints are kept (default: the user's data "
                 "directory, ~/.local/share/cohort/master)");
  app.add_option("--db", db_path, "SQLite database file (default: DATA_DIR/master.db)");
  app.add_option("--agent-timeout", agent_timeout,
                 "Seconds without contact after which an agent counts as lost (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--agent-secret-file", secret_file,
                 "The cluster secret agents must present (cohort-agent --secret-file); created "
                 "with mode 0600 when missing (default: DATA_DIR/agent-secret)");
  app.footer("Example:\n  cohort-master --port 8080 --data-dir /var/lib/cohort\n"
             "  cohort-agent --master http://127.0.0.1:8080 --slots 2 "
             "--secret-file /var/lib/cohort/agent-secret");
  CLI11_PARSE(app, argc, argv);
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (db_path.empty()) db_path = (std::filesystem::path(data_dir) / "master.db").string();
  auto db = cohort::master::OpenSqliteDatabase(db_path);
  if (!db.ok()) {
    std::fprintf(stderr, "cohort-master: %s\n", db.status().ToString().c_str());
    return 1;
  }
  auto master = cohort::master::Master::Create(
      *std::move(db), {.data_dir = data_dir, .agent_timeout = absl::Seconds(agent_timeout)});
  if (!master.ok()) {
    std::fprintf(stderr, "cohort-master: %s\n", master.status().ToString().c_str());
    return 1;
  }
  if (secret_file.empty()) secret_file = (std::filesystem::path(data_dir) / "agent-secret").string();
  absl::StatusOr<std::string> secret = cohort::master::http::LoadOrCreateAgentSecret(secret_file);
  if (!secret.ok()) {
    std::fprintf(stderr, "cohort-master: %s\n", secret.status().ToString().c_str());
    return 1;
  }
  httplib::Server server;
  // Long polls hold threads: log follows are capped (MasterOptions::max_log_followers) and each
  // agent holds at most one, so this many leaves room for every other request.
  server.new_task_queue = [] { return new httplib::ThreadPool(128); };
  const bool loopback = cohort::master::http::IsLoopbackHost(host);
  if (!loopback) {
    std::fprintf(stderr,
                 "cohort-master: warning: listening on %s over plain HTTP without users' "
                 "authentication: anyone who can reach it can submit experiments, which run "
                 "programs on its agents. Keep it on a trusted network (TLS and users are not "
                 "implemented yet).\n",
                 host.c_str());
  }
  cohort::master::http::RegisterRoutes(
      server, **master,
      std::make_unique<cohort::master::http::AgentSecretAuthenticator>(*secret, secret_file),
      cohort::master::http::BrowserGuard(loopback));
  int bound = port;
  if (port == 0) {
    bound = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    std::fprintf(stderr,
                 "cohort-master: cannot listen on %s:%d (in use? pick another with --port)\n",
                 host.c_str(), port);
    return 1;
  }
  std::printf("cohort-master: agents authenticate with the secret in %s (cohort-agent "
              "--secret-file)\n",
              secret_file.c_str());
  g_server = &server;
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  std::printf("cohort-master: listening on http://%s:%d (database %s)\n", host.c_str(), bound,
              db_path.c_str());
  std::fflush(stdout);
  server.listen_after_bind();
  std::printf("cohort-master: stopped\n");
  return 0;
}
