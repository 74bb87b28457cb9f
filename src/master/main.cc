// cohort-master: the cluster's REST API, database and scheduler (docs/design/0006-cluster.md).

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "client/local_cluster.h"
#include "cohort/status.h"
#include "common/command_line.h"
#include "common/directory_lock.h"
#include "common/env.h"
#include "common/private_file.h"
#include "config/yaml_json.h"
#include "master/db/database.h"
#include "master/db/open_database.h"
#include "master/db/sqlite_backup.h"
#include "master/db/sqlite_to_postgres.h"
#include "master/http/agent_secret_authenticator.h"
#include "master/http/cluster_authenticator.h"
#include "master/http/http_server.h"
#include "master/http/routes.h"
#include "master/http/tls_server.h"
#include "master/master.h"
#include "master/slurm/slurm_flags.h"
#include "master/users/password.h"

namespace {

struct Flags {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string data_dir =
      (std::filesystem::path(cohort::client::LocalClusterDir()) / "master").string();
  std::string db_url;            // --db: a URL or a file path (master/db/open_database.h)
  std::string db_password_file;  // --db-password-file: PostgreSQL's password
  std::string migrate_from;      // --migrate-from: a SQLite database to copy into --db
  double agent_timeout = 30;
  double preemption_timeout = 600;
  double readopt_grace = 0;  // 0: agent_timeout
  std::string secret_file;
  std::string initial_password_file;
  cohort::master::http::TlsFiles tls;
  cohort::master::LogRetentionPolicy log_retention;
  double db_check_seconds = 60;
  std::string backup_file;
  bool overwrite = false;
  std::vector<std::string> checkpoint_storage_roots;
  std::string resource_pools_file;  // --resource-pools
  cohort::master::slurm_rm::SlurmFlags slurm;
  int http_connections = 4096;
  // Two per core: at 200 agents on 2 cores (docs/performance.md, "a fourth time") 4 gave the
  // master's own tail the most posts within 50 ms; 8-16 did as well where the load generator
  // competed for the cores, 2 no better than 4.
  int concurrent_handlers = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()) * 2);
};

cohort::master::MasterOptions MasterOptionsFrom(const Flags& f) {
  return {.data_dir = f.data_dir,
          .checkpoint_storage_roots = f.checkpoint_storage_roots,
          .agent_timeout = absl::Seconds(f.agent_timeout),
          .preemption_timeout = absl::Seconds(f.preemption_timeout),
          .readopt_grace = absl::Seconds(f.readopt_grace > 0 ? f.readopt_grace : f.agent_timeout),
          .log_retention = f.log_retention};
}

// --resource-pools FILE, or just the default pool.
absl::StatusOr<cohort::master::ResourcePools> LoadResourcePools(const Flags& f) {
  if (f.resource_pools_file.empty()) return cohort::master::DefaultResourcePools();
  COHORT_ASSIGN_OR_RETURN(std::string text, cohort::config::ReadYamlText(f.resource_pools_file));
  return cohort::master::ParseResourcePools(text, f.resource_pools_file);
}

// --db's value: a URL or path ParseDatabaseUrl accepts; otherwise a usage error saying why
// (never with a password the URL holds).
CLI::Validator DatabaseUrlRule() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        absl::StatusOr<cohort::master::DatabaseUrl> url = cohort::master::ParseDatabaseUrl(input);
        return url.ok() ? "" : std::string(url.status().message());
      },
      "URL");
}

// The database's flags: log retention, the check at start, backups (docs/reliability.md).
void AddStorageFlags(CLI::App& app, Flags& f) {
  app.add_option("--log-retention-lines-per-trial", f.log_retention.lines_per_trial,
                 "Lines of log kept per trial (default 1000000; 0: all). Past it a trial keeps "
                 "its first tenth and its newest nine tenths, and one line says how many were "
                 "dropped between them")
      ->check(cohort::NonNegativeNumber());
  app.add_option("--log-retention-total-bytes", f.log_retention.total_bytes,
                 "Bytes of log text kept across all trials (default 4294967296, 4 GiB; 0: no "
                 "limit). Past it the oldest trials' logs are dropped first, never the newest "
                 "trial's")
      ->check(cohort::NonNegativeNumber());
  app.add_option("--db-check-seconds", f.db_check_seconds,
                 "At start, check the database's pages for damage for at most this long "
                 "(default 60; 0: skip). A damaged database is refused")
      ->check(cohort::NonNegativeNumber());
  app.add_option("--backup", f.backup_file,
                 "Instead of serving: copy the SQLite database (of --data-dir, or --db) to this "
                 "file and exit. Safe while a master runs on it; the copy is checked, and is a "
                 "database to start a master on (--db FILE). PostgreSQL: use pg_dump");
  app.add_option("--db-password-file", f.db_password_file,
                 "PostgreSQL: read the password from this file (mode 0600) rather than from "
                 "PGPASSWORD or ~/.pgpass; never put it in --db");
  app.add_flag("--overwrite", f.overwrite, "With --backup: replace the file if it exists");
  app.add_option("--migrate-from", f.migrate_from,
                 "Instead of serving: copy this SQLite database (sqlite:PATH or a file path; stop "
                 "its master first) into the empty PostgreSQL database of --db and exit; then "
                 "start the master with --db")
      ->check(DatabaseUrlRule());
}

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--host", f.host, "Address to listen on (default 127.0.0.1; 0.0.0.0 for all)");
  app.add_option("--port", f.port, "Port (default 8080; 0 picks a free one and prints it)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--data-dir", f.data_dir,
                 "Where contexts and default checkpoints are kept (default: the user's data "
                 "directory, ~/.local/share/cohort/master)");
  app.add_option("--db", f.db_url,
                 "The database: sqlite:PATH (a SQLite file, relative or absolute; also "
                 "sqlite:///ABSOLUTE/PATH), a file path (default: DATA_DIR/master.db), or "
                 "postgresql://USER@HOST:PORT/DATABASE?sslmode=... (password: "
                 "--db-password-file, PGPASSWORD or ~/.pgpass)")
      ->check(DatabaseUrlRule());
  app.add_option("--checkpoint-storage-roots", f.checkpoint_storage_roots,
                 "Directories (comma-separated, absolute) where experiments may keep "
                 "checkpoints besides DATA_DIR/checkpoints: a shared_fs host_path (with its "
                 "storage_path) must lie in one of them, and the master reads and deletes "
                 "checkpoint files nowhere else. None may hold DATA_DIR or lie inside it")
      ->delimiter(',');
  app.add_option("--resource-pools", f.resource_pools_file,
                 "YAML file of resource pools (resource_pools: [{pool_name, description, "
                 "scheduler: {type: priority|fair_share, preemption: true|false}}]); the pool "
                 "'default' always exists (docs/scheduling.md)");
  app.add_option("--preemption-timeout", f.preemption_timeout,
                 "Seconds a preempted trial has to checkpoint and stop before it is killed (it "
                 "then resumes from its latest checkpoint; default 600)")
      ->check(CLI::PositiveNumber);
  app.add_option("--agent-timeout", f.agent_timeout,
                 "Seconds without contact after which an agent counts as lost (default 30)")
      ->check(cohort::PositiveNumber());
  app.add_option("--readopt-grace", f.readopt_grace,
                 "After a restart, seconds to wait for agents to reclaim the trials that were "
                 "running before they are queued again (default: --agent-timeout)")
      ->check(cohort::PositiveNumber());
  app.add_option("--http-connections,--http-threads", f.http_connections,
                 "Connections served at once, a thread each (default 4096; more wait in the "
                 "listen queue). An agent keeps one per running trial and one for its poll")
      ->check(CLI::Range(16, 65536));
  app.add_option("--concurrent-handlers", f.concurrent_handlers,
                 "At most this many requests run their handlers at once, the others wait their "
                 "turn in arrival order (long polls and follows excepted; default: two per "
                 "core); 0: no limit")
      ->check(CLI::Range(0, 65536));
  app.add_option("--agent-secret-file", f.secret_file,
                 "The cluster secret agents must present (cohort-agent --secret-file); created "
                 "with mode 0600 when missing (default: DATA_DIR/agent-secret)");
  app.add_option("--initial-password-file", f.initial_password_file,
                 "On the first start, the password of the user 'admin' (else "
                 "$COHORT_INITIAL_PASSWORD, else a random one written to DATA_DIR/admin-password, "
                 "mode 0600)");
  app.add_option("--tls-cert", f.tls.cert_file,
                 "Serve HTTPS with this certificate (PEM; intermediate CAs after it); needs "
                 "--tls-key. Clients verify it: cohort --tls-ca, cohort-agent --tls-ca");
  app.add_option("--tls-key", f.tls.key_file,
                 "The private key of --tls-cert (PEM, unencrypted; keep it chmod 600)");
  AddStorageFlags(app, f);
  cohort::master::slurm_rm::AddSlurmFlags(app, f.slurm);
  app.footer(
      "Example:\n  cohort-master --port 8080 --data-dir /var/lib/cohort\n"
      "  cohort-agent --master http://127.0.0.1:8080 --slots 2 "
      "--secret-file /var/lib/cohort/agent-secret\n"
      "  cohort-master --host 0.0.0.0 --tls-cert master.crt --tls-key master.key\n"
      "  cohort-master --data-dir /var/lib/cohort --backup /backups/cohort-$(date +%F).db\n"
      "  cohort-master --db 'postgresql://cohort@db.example:5432/cohort?sslmode=verify-full' "
      "--db-password-file /etc/cohort/db-password\n"
      "  cohort-master --migrate-from /var/lib/cohort/master.db --db "
      "'postgresql://cohort@db.example:5432/cohort' --db-password-file /etc/cohort/db-password");
}

// Says what a master listening beyond loopback exposes (without TLS: everything on the wire).
void WarnIfExposed(const Flags& f) {
  if (cohort::master::http::IsLoopbackHost(f.host)) return;
  if (f.tls.enabled()) return;
  std::fprintf(stderr,
               "cohort-master: warning: listening on %s over plain HTTP: passwords, login "
               "tokens, the agents' secret and everything else cross the network unencrypted. "
               "Serve HTTPS with --tls-cert and --tls-key, or keep it on a trusted network.\n",
               f.host.c_str());
}

// Binds the port as the flags say, serving `tls` (LoadTls's result); null, with the error
// printed, when it cannot: a port in use names its holder (net::Listen).
std::unique_ptr<cohort::master::http::HttpServer> Bind(const Flags& f,
                                                       cohort::master::http::TlsPem tls) {
  absl::StatusOr<std::unique_ptr<cohort::master::http::HttpServer>> server =
      cohort::master::http::HttpServer::Bind({.host = f.host,
                                              .port = f.port,
                                              .tls = std::move(tls),
                                              .max_connections = f.http_connections});
  if (server.ok()) return *std::move(server);
  std::fprintf(stderr, "cohort-master: %s; pick another --port (or --host)\n",
               std::string(server.status().message()).c_str());
  return nullptr;
}

// The first admin's password, from the flag's file or $COHORT_INITIAL_PASSWORD; empty when
// neither is given.
absl::StatusOr<std::string> GivenInitialPassword(const Flags& f) {
  if (!f.initial_password_file.empty()) {
    absl::StatusOr<std::string> password = cohort::ReadSecretFile(f.initial_password_file);
    if (!password.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--initial-password-file: ", password.status().message()));
    }
    return password;
  }
  return cohort::env::GetOr("COHORT_INITIAL_PASSWORD", "");
}

// On the first start (no users yet), creates the user 'admin' with the given password or a
// random one kept in DATA_DIR/admin-password (0600), and says where it is (never the password).
absl::Status CreateFirstAdmin(cohort::master::users::Users& users, const Flags& f) {
  COHORT_ASSIGN_OR_RETURN(bool has_users, users.HasUsers());
  if (has_users) return absl::OkStatus();
  COHORT_ASSIGN_OR_RETURN(std::string password, GivenInitialPassword(f));
  if (password.empty()) {
    password = cohort::master::users::RandomPassword();
    const std::string file = (std::filesystem::path(f.data_dir) / "admin-password").string();
    COHORT_RETURN_IF_ERROR(cohort::WritePrivateFile(file, password + "\n"));
    std::printf(
        "cohort-master: created the user 'admin'; its password is in %s (readable by "
        "this user only; `cohort user login admin`)\n",
        file.c_str());
  } else {
    std::printf("cohort-master: created the user 'admin' with the given initial password\n");
  }
  return users.EnsureAdmin(password).status();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "cohort-master: %s\n", status.ToString().c_str());
  return 1;
}

// The database the flags name: --db, else the SQLite file DATA_DIR/master.db.
absl::StatusOr<cohort::master::DatabaseUrl> DatabaseOf(const Flags& f) {
  if (f.db_url.empty()) {
    return cohort::master::DatabaseUrl{cohort::master::DatabaseUrl::Backend::kSqlite,
                                       (std::filesystem::path(f.data_dir) / "master.db").string()};
  }
  absl::StatusOr<cohort::master::DatabaseUrl> url = cohort::master::ParseDatabaseUrl(f.db_url);
  if (!url.ok()) return absl::InvalidArgumentError(absl::StrCat("--db: ", url.status().message()));
  return url;
}

// How the master names its database when it starts listening: a SQLite file by its path, a
// PostgreSQL database by its URL (which holds no password: ParseDatabaseUrl refuses one).
std::string DatabaseName(const cohort::master::DatabaseUrl& db) {
  switch (db.backend) {
    case cohort::master::DatabaseUrl::Backend::kSqlite:
      return db.path;
    case cohort::master::DatabaseUrl::Backend::kPostgres:
      return cohort::master::MaskDatabaseUrl(db.path);
  }
  return "";
}

// `cohort-master --backup FILE`: copies the database, saying how far it got every second.
int RunBackup(const Flags& f, const cohort::master::DatabaseUrl& db) {
  if (db.backend == cohort::master::DatabaseUrl::Backend::kPostgres) {
    return Fail(absl::FailedPreconditionError(absl::StrCat(
        "--backup copies a SQLite file; back up a PostgreSQL database with its own tools, "
        "while the master runs: pg_dump --format=custom --file=cohort.dump '",
        cohort::master::MaskDatabaseUrl(db.path),
        "' (restore into an empty database with pg_restore --dbname=URL cohort.dump, then "
        "start the master with --db on it)")));
  }
  const std::string& from = db.path;
  absl::Time last_report = absl::Now();
  cohort::master::BackupOptions options;
  options.overwrite = f.overwrite;
  options.progress = [&](int64_t copied, int64_t total) {
    if (copied < total && absl::Now() - last_report < absl::Seconds(1)) return;
    last_report = absl::Now();
    std::printf(
        "cohort-master: backup: %lld of %lld pages (%.0f%%)\n", static_cast<long long>(copied),
        static_cast<long long>(total),
        total > 0 ? 100.0 * static_cast<double>(copied) / static_cast<double>(total) : 100.0);
    std::fflush(stdout);
  };
  absl::StatusOr<cohort::master::BackupResult> done =
      cohort::master::BackupSqliteDatabase(from, f.backup_file, options);
  if (!done.ok()) return Fail(done.status());
  std::printf("cohort-master: backed up %s to %s (%lld bytes, checked%s)\n", from.c_str(),
              f.backup_file.c_str(), static_cast<long long>(done->bytes),
              done->check == cohort::master::IntegrityCheck::kPassed ? "" : " in part");
  return 0;
}

// PostgreSQL's password from --db-password-file; empty without one (libpq's own sources).
absl::StatusOr<std::string> DatabasePassword(const Flags& f) {
  if (f.db_password_file.empty()) return std::string();
  absl::StatusOr<std::string> password = cohort::ReadSecretFile(f.db_password_file);
  if (!password.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--db-password-file: ", password.status().message()));
  }
  return password;
}

// `cohort-master --migrate-from sqlite:PATH --db postgresql://...`: copies the SQLite database
// into the empty PostgreSQL one, saying how far it got every second.
int RunMigrateFrom(const Flags& f, const cohort::master::DatabaseUrl& to) {
  absl::StatusOr<cohort::master::DatabaseUrl> from =
      cohort::master::ParseDatabaseUrl(f.migrate_from);
  if (!from.ok()) return Fail(from.status());
  if (from->backend != cohort::master::DatabaseUrl::Backend::kSqlite ||
      to.backend != cohort::master::DatabaseUrl::Backend::kPostgres) {
    return Fail(absl::InvalidArgumentError(
        "--migrate-from copies a SQLite database (sqlite:PATH) into a PostgreSQL one (--db "
        "postgresql://...)"));
  }
  cohort::master::PostgresDatabaseOptions options;
  absl::StatusOr<std::string> password = DatabasePassword(f);
  if (!password.ok()) return Fail(password.status());
  options.connection.password = *std::move(password);
  const absl::Time start = absl::Now();
  absl::Time last_report = start;
  absl::StatusOr<cohort::master::CopyReport> report = cohort::master::CopySqliteToPostgres(
      from->path, to.path, options, [&](const std::string& table, int64_t done, int64_t total) {
        if (done < total && absl::Now() - last_report < absl::Seconds(1)) return;
        last_report = absl::Now();
        std::printf("cohort-master: migrate: %s: %lld of %lld rows\n", table.c_str(),
                    static_cast<long long>(done), static_cast<long long>(total));
        std::fflush(stdout);
      });
  if (!report.ok()) return Fail(report.status());
  std::printf(
      "cohort-master: copied %lld rows of %lld tables from %s to %s in %.1f s (counts checked)%s\n",
      static_cast<long long>(report->rows), static_cast<long long>(report->tables),
      from->path.c_str(), cohort::master::MaskDatabaseUrl(to.path).c_str(),
      absl::ToDoubleSeconds(absl::Now() - start),
      report->cleaned_texts == 0
          ? ""
          : absl::StrCat("; ", report->cleaned_texts,
                         " text values held a NUL or invalid UTF-8, which PostgreSQL cannot "
                         "store, and were stored with U+FFFD in their place")
                .c_str());
  return 0;
}

// Opens the database, refusing a foreign or damaged one (OpenDatabase), and says how its check
// went.
absl::StatusOr<std::unique_ptr<cohort::master::Database>> OpenAndReport(
    const Flags& f, const cohort::master::DatabaseUrl& url) {
  const absl::Time start = absl::Now();
  cohort::master::DatabaseOptions options;
  options.check_time_limit = absl::Seconds(f.db_check_seconds);
  COHORT_ASSIGN_OR_RETURN(options.postgres_password, DatabasePassword(f));
  // A connection for each request handler at once, and for the master's own loops.
  options.pool_size = std::max(f.concurrent_handlers, 4) + 4;
  absl::StatusOr<cohort::master::OpenedDatabase> db = cohort::master::OpenDatabase(url, options);
  if (!db.ok()) return db.status();
  const double took = absl::ToDoubleSeconds(absl::Now() - start);
  switch (db->integrity_check) {
    case cohort::master::IntegrityCheck::kPassed:
      std::printf("cohort-master: checked the database in %.1f s: no damage found\n", took);
      break;
    case cohort::master::IntegrityCheck::kCutShort:
      std::printf(
          "cohort-master: warning: the database check stopped after --db-check-seconds %g with "
          "no damage found so far; the rest of the file was not checked\n",
          f.db_check_seconds);
      break;
    case cohort::master::IntegrityCheck::kSkipped:
      break;
  }
  return std::move(db->database);
}

// SIGINT and SIGTERM are taken by the main thread (Serve waits for them), never by a handler:
// stopping the master's long polls takes its lock, which a signal handler must not. Call before
// any thread starts, so every thread inherits the mask.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Serves until SIGINT or SIGTERM, then ends every long poll and stops the server (the master
// exits within a request's time whatever follows are open: docs/reliability.md) and the master:
// its threads joined, its database closed (which checkpoints the WAL).
int Serve(cohort::master::http::HttpServer& server, cohort::master::http::Router& router,
          std::unique_ptr<cohort::master::Master> master, sigset_t stop_signals, const Flags& f,
          const std::string& database) {
  if (absl::Status serving = server.Serve(router.table()); !serving.ok()) return Fail(serving);
  const char* scheme = server.https() ? "https" : "http";
  std::printf("cohort-master: listening on %s://%s:%d (database %s)\n", scheme, f.host.c_str(),
              server.port(), database.c_str());
  std::printf("cohort-master: web interface at %s://%s:%d/ (log in as a user of this master)\n",
              scheme, f.host.c_str(), server.port());
  std::fflush(stdout);
  int signal = -1;
  while (signal < 0) signal = sigwaitinfo(&stop_signals, nullptr);  // EINTR: wait again
  std::printf("cohort-master: stopping (%s)\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  std::fflush(stdout);
  master->BeginShutdown();
  server.Stop();
  master.reset();
  std::printf("cohort-master: stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{
      "cohort-master: the Cohort cluster's REST API (/api/v1), database (SQLite) and "
      "gang scheduler. Agents (cohort-agent) connect to it; the cohort CLI talks to it."};
  AddFlags(app, f);
  if (std::optional<int> exit = cohort::ParseCommandLine(app, "cohort-master", argc, argv)) {
    return *exit;
  }
  // Everything the master creates (its database, contexts, secrets) is its user's alone.
  ::umask(077);
  absl::StatusOr<cohort::master::DatabaseUrl> database = DatabaseOf(f);
  if (!database.ok()) return Fail(database.status());
  if (!f.backup_file.empty()) return RunBackup(f, *database);
  if (!f.migrate_from.empty()) return RunMigrateFrom(f, *database);
  const sigset_t stop_signals = BlockStopSignals();
  // Before anything else, so a bad certificate or key is reported before any file is created;
  // read once: what is checked here is what the server serves.
  absl::StatusOr<cohort::master::http::TlsPem> tls = cohort::master::http::LoadTls(f.tls);
  if (!tls.ok()) return Fail(tls.status());
  std::error_code ec;
  std::filesystem::create_directories(f.data_dir, ec);
  // Before the database and the port: a second master on this data directory, or on a port in
  // use, leaves the running one's state alone.
  absl::StatusOr<cohort::master::ResourcePools> pools = LoadResourcePools(f);
  if (!pools.ok()) return Fail(pools.status());
  absl::StatusOr<cohort::DirectoryLock> lock = cohort::DirectoryLock::Acquire(
      f.data_dir, "cohort-master", "stop it first, or give this one another --data-dir");
  if (!lock.ok()) return Fail(lock.status());
  std::unique_ptr<cohort::master::http::HttpServer> server = Bind(f, *std::move(tls));
  if (server == nullptr) return 1;
  auto db = OpenAndReport(f, *database);
  if (!db.ok()) return Fail(db.status());
  cohort::master::MasterOptions options = MasterOptionsFrom(f);
  options.resource_pools = *std::move(pools);
  const std::string listen_host = f.host == "0.0.0.0" || f.host == "::" ? "127.0.0.1" : f.host;
  options.resource_manager = cohort::master::slurm_rm::ResourceManagerFrom(
      f.slurm,
      absl::StrCat(f.tls.enabled() ? "https://" : "http://", listen_host, ":", server->port()), "");
  auto master = cohort::master::Master::Create(*std::move(db), std::move(options));
  if (!master.ok()) return Fail(master.status());
  if (f.secret_file.empty()) {
    f.secret_file = (std::filesystem::path(f.data_dir) / "agent-secret").string();
  }
  absl::StatusOr<std::string> secret = cohort::master::http::LoadOrCreateAgentSecret(f.secret_file);
  if (!secret.ok()) return Fail(secret.status());
  if (absl::Status admin = CreateFirstAdmin((*master)->users(), f); !admin.ok()) {
    return Fail(admin);
  }
  WarnIfExposed(f);
  cohort::master::http::Router router(
      cohort::master::http::MakeClusterAuthenticator(
          **master, *secret, f.secret_file,
          (std::filesystem::path(f.data_dir) / "admin-password").string()),
      cohort::master::http::BrowserGuard(cohort::master::http::IsLoopbackHost(f.host),
                                         f.tls.enabled()),
      f.concurrent_handlers);
  cohort::master::http::RegisterRoutes(router, **master);
  std::printf(
      "cohort-master: agents authenticate with the secret in %s (cohort-agent "
      "--secret-file)\n",
      f.secret_file.c_str());
  return Serve(*server, router, *std::move(master), stop_signals, f, DatabaseName(*database));
}
