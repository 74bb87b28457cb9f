#include "master/db/testing/postgres_server.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/net.h"

namespace cohort::master::db_testing {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(60);

// What the child wrote so far, for an error message.
std::string OutputOf(Subprocess& child) {
  std::string out;
  while (child.ReadAvailable(&out, absl::ZeroDuration(), 64 << 10) && out.size() < (64 << 10)) {
  }
  return out;
}

}  // namespace

std::string PostgresBinDir() {
  if (const char* dir = std::getenv("COHORT_POSTGRES_BIN"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  std::string best;
  int best_version = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string version = entry.path().filename().string();
    const int number = std::atoi(version.c_str());
    const std::string bin = entry.path().string() + "/bin";
    if (number > best_version && ::access((bin + "/postgres").c_str(), X_OK) == 0) {
      best_version = number;
      best = bin;
    }
  }
  return best;
}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  server->bin_dir_ = PostgresBinDir();
  if (server->bin_dir_.empty()) {
    return absl::FailedPreconditionError(
        "PostgreSQL is not installed (no /usr/lib/postgresql/N/bin/postgres): run "
        "scripts/install.sh --test, or set COHORT_POSTGRES_BIN");
  }
  if (::geteuid() == 0) {
    const struct passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) {
      return absl::FailedPreconditionError(
          "running as root, but there is no `postgres` user to run the server as (PostgreSQL "
          "refuses root): run scripts/install.sh --test");
    }
    // The server's user owns its directory; the directory's parent must let it through.
    if (::chown(server->dir_.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      return absl::InternalError(
          absl::StrCat("chown ", server->dir_.path(), " to postgres failed"));
    }
  }
  int port = 0;
  COHORT_ASSIGN_OR_RETURN(int fd, net::Listen("127.0.0.1", 0, &port));
  ::close(fd);
  server->port_ = port;
  COHORT_RETURN_IF_ERROR(server->InitDb());
  COHORT_RETURN_IF_ERROR(server->Launch());
  return server;
}

PostgresServer::~PostgresServer() { Kill(); }

std::vector<std::string> PostgresServer::AsServerUser(std::vector<std::string> argv) const {
  if (::geteuid() != 0) return argv;
  std::vector<std::string> out = {"setpriv",       "--reuid=postgres", "--regid=postgres",
                                  "--init-groups", "--pdeathsig=KILL", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

absl::Status PostgresServer::RunTool(std::vector<std::string> argv, absl::Duration timeout) {
  SubprocessOptions options;
  options.argv = AsServerUser(std::move(argv));
  options.parent_death_signal = SIGKILL;
  options.cwd = dir_.path();
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> tool, Subprocess::Start(options));
  std::string output;
  const absl::Time deadline = absl::Now() + timeout;
  while (tool->ReadAvailable(&output, std::max(deadline - absl::Now(), absl::ZeroDuration()),
                             64 << 10) &&
         absl::Now() < deadline) {
  }
  absl::StatusOr<int> status = tool->Wait(std::max(deadline - absl::Now(), absl::Seconds(1)));
  if (!status.ok() || *status != 0) {
    return absl::InternalError(absl::StrCat(
        absl::StrJoin(options.argv, " "), " failed (",
        status.ok() ? absl::StrCat("status ", *status) : std::string(status.status().message()),
        "): ", output.substr(0, 4000)));
  }
  return absl::OkStatus();
}

absl::Status PostgresServer::InitDb() {
  return RunTool({bin_dir_ + "/initdb", "-D", dir_.path() + "/data", "-U", "postgres",
                  "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"},
                 kStartTimeout);
}

absl::Status PostgresServer::Launch() {
  SubprocessOptions options;
  options.argv = AsServerUser(
      {bin_dir_ + "/postgres", "-D", dir_.path() + "/data", "-p", std::to_string(port_), "-k",
       dir_.path(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
       // fsync off loses data only when the machine itself goes down; a killed server loses
       // nothing it acknowledged (synchronous_commit stays on), which the tests rely on.
       "-c", "full_page_writes=off", "-c", "max_connections=200"});
  options.parent_death_signal = SIGKILL;
  options.cwd = dir_.path();
  COHORT_ASSIGN_OR_RETURN(server_, Subprocess::Start(options));
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (absl::Now() < deadline) {
    if (RunTool({bin_dir_ + "/pg_isready", "-q", "-h", dir_.path(), "-p", std::to_string(port_)},
                absl::Seconds(10))
            .ok()) {
      return absl::OkStatus();
    }
    if (std::optional<int> exited = server_->Poll()) {
      return absl::UnavailableError(
          absl::StrCat("postgres exited with status ", *exited,
                       " before accepting connections: ", OutputOf(*server_)));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("postgres did not accept connections within ",
                                                  absl::FormatDuration(kStartTimeout), ": ",
                                                  OutputOf(*server_)));
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& name) {
  COHORT_RETURN_IF_ERROR(RunTool({bin_dir_ + "/createdb", "-h", dir_.path(), "-p",
                                  std::to_string(port_), "-U", "postgres", name},
                                 absl::Seconds(30)));
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", name);
}

void PostgresServer::Kill() {
  if (server_ == nullptr) return;
  server_->Signal(SIGKILL);
  // Reaped or not within the time, the object goes; ~Subprocess kills and reaps again.
  (void)server_->Wait(absl::Seconds(10));
  server_.reset();
}

absl::Status PostgresServer::Restart() {
  Kill();  // the whole process group: no backend outlives the postmaster holding its memory
  return Launch();
}

absl::StatusOr<std::string> NewSharedDatabase() {
  // Never destroyed: a static's destructor at exit would race the tests' own teardown; the
  // server dies with the process (its parent-death signal).
  static absl::StatusOr<std::unique_ptr<PostgresServer>>* const server =
      new absl::StatusOr<std::unique_ptr<PostgresServer>>(PostgresServer::Start());
  static std::atomic<int> databases{0};
  if (!server->ok()) return server->status();
  return (**server)->CreateDatabase(absl::StrCat("shared_", ++databases));
}

}  // namespace cohort::master::db_testing
