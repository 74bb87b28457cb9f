#include "cli/cluster_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/login_store.h"
#include "client/local_cluster.h"
#include "client/master_client.h"
#include "common/env.h"
#include "common/private_file.h"
#include "common/sibling_program.h"
#include "nlohmann/json.hpp"
#include "wire/cluster_bodies.h"
#include "wire/user_bodies.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

// Starts argv detached (own session, output appended to `log`); returns its pid or -1.
pid_t SpawnDaemon(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setsid();
  ::signal(SIGPIPE, SIG_DFL);  // this CLI ignores it (main.cc); the daemons choose for themselves
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int null = ::open("/dev/null", O_RDONLY);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
  }
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

bool Alive(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // our child, and it exited
  return ::kill(pid, 0) == 0;
}

// Logs this CLI in to the local master as admin, with $COHORT_INITIAL_PASSWORD or the password
// the master generated in its data directory; keeps the token (login_store.h).
absl::Status LogInAsAdmin(client::MasterClient& client, const fs::path& master_dir) {
  std::string password;
  if (std::string given = env::GetOr("COHORT_INITIAL_PASSWORD", ""); !given.empty()) {
    password = std::move(given);
  } else {
    absl::StatusOr<std::string> generated =
        ReadSecretFile((master_dir / "admin-password").string());
    if (!generated.ok()) {
      return absl::UnavailableError(absl::StrCat("not logged in as admin (",
                                                 generated.status().message(),
                                                 "): log in with `cohort user login`"));
    }
    password = *generated;
  }
  absl::StatusOr<wire::LoginResponse> login = LogIn(client, "admin", password);
  if (!login.ok()) {
    return absl::UnauthenticatedError(
        absl::StrCat("not logged in as admin (", login.status().message(),
                     "; was its password changed?): log in with `cohort user login`"));
  }
  return absl::OkStatus();
}

// What `cohort cluster up` was asked for; kept in cluster.json, so a second `up` can tell
// whether the running cluster is the one asked for.
struct UpFlags {
  int agents = 1;
  std::optional<int> slots = 2;  // nullopt: --gpus
  int port = 8080;
  std::vector<std::string> roots;  // --checkpoint-storage-roots
  bool replace = false;            // stop a cluster that differs and start this one

  Json ToJson() const {
    return Json{{"agents", agents},
                {"slots", slots ? Json(*slots) : Json("gpus")},
                {"port", port},
                {"checkpoint_storage_roots", roots}};
  }
  // The flags of the running cluster (recorded as ToJson) that differ from these, as
  // "--agents 1 (asked: 2)"; empty when it is the cluster asked for. A record of an older CLI,
  // without them, is taken as the same.
  std::vector<std::string> DifferencesFrom(const Json& recorded) const {
    std::vector<std::string> out;
    if (!recorded.is_object()) return out;
    const Json asked = ToJson();
    for (const auto& [key, value] : asked.items()) {
      if (!recorded.contains(key) || recorded[key] == value) continue;
      const auto shown = [](const Json& v) {
        return v.is_string() ? v.get<std::string>() : v.dump();
      };
      out.push_back(absl::StrCat("--", absl::StrReplaceAll(key, {{"_", "-"}}), " ",
                                 shown(recorded[key]), " (asked: ", shown(value), ")"));
    }
    return out;
  }
};

int Down();

// When `record` (cluster.json) names processes that are still alive: the cluster asked for
// (`flags`) answers: says where and returns kExitOk; it differs: says how and returns
// kExitInvalid, or with --replace stops it and returns nullopt; it does not answer: says how to
// stop it and returns kExitInvalid. nullopt when no local cluster runs.
std::optional<int> CheckRunningCluster(const fs::path& record, const UpFlags& flags) {
  std::error_code ec;
  if (!fs::exists(record, ec)) return std::nullopt;
  std::ifstream in(record);
  Json cluster = Json::parse(in, nullptr, false);
  if (!cluster.is_object() || !cluster.contains("pids")) return std::nullopt;
  bool alive = false;
  for (const Json& p : cluster["pids"]) alive = alive || ::kill(p.get<pid_t>(), 0) == 0;
  if (!alive) return std::nullopt;
  const std::string url = cluster.value("url", std::string());
  client::MasterClient client(url, absl::Seconds(2));
  if (GetAs(client, "/api/v1/info", wire::ParseMasterInfo).ok()) {
    const std::vector<std::string> differ =
        flags.DifferencesFrom(cluster.value("flags", Json::object()));
    if (!differ.empty() && flags.replace) {
      std::cout << "cluster up: replacing the cluster running at " << url << " ("
                << absl::StrJoin(differ, ", ") << ")\n";
      Down();
      return std::nullopt;
    }
    if (!differ.empty()) {
      std::cerr << "cohort: error: a local cluster already runs at " << url
                << " with other flags: " << absl::StrJoin(differ, ", ")
                << ". `cohort cluster down` stops it, or `cohort cluster up --replace` replaces "
                   "it with the one asked for\n";
      return kExitInvalid;
    }
    std::cout << "cluster up: already running at " << url << " (`cohort cluster down` stops it)\n";
    if (!LoadLogin(client.url())) {
      absl::Status login = LogInAsAdmin(client, record.parent_path() / "master");
      if (!login.ok()) std::cerr << "cohort: warning: " << login.message() << "\n";
    }
    return kExitOk;
  }
  std::cerr << "cohort: error: a local cluster's processes are running but its master at " << url
            << " does not answer: `cohort cluster down` stops them\n";
  return kExitInvalid;
}

// Starts `agents` agents of `slots` CPU slots each against the master at `url` (nullopt: each
// offers what it finds itself, the GPUs nvidia-smi lists, else its cores); their pids.
std::vector<pid_t> SpawnAgents(int agents, std::optional<int> slots, const std::string& url,
                               const fs::path& dir) {
  std::vector<pid_t> pids;
  for (int i = 1; i <= agents; ++i) {
    const std::string id = absl::StrCat("agent-", i);
    const int lo = 29500 + 100 * (i - 1);
    std::vector<std::string> argv = {
        SiblingProgram("cohort-agent"),
        "--master",
        url,
        "--id",
        id,
        "--cpus",
        std::to_string(
            std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(agents))),
        "--port-range",
        absl::StrCat(lo, "-", lo + 99),
        "--work-dir",
        (dir / "agents" / id).string(),
        "--secret-file",
        (dir / "master" / "agent-secret").string()};
    if (slots) argv.insert(argv.end(), {"--slots", std::to_string(*slots)});
    pids.push_back(SpawnDaemon(argv, dir / "logs" / (id + ".log")));
  }
  return pids;
}

// Waits until `agents` agents are connected, as the logged-in `client` sees them; false (with
// the error printed) past `deadline`.
bool WaitForAgents(client::MasterClient& client, int agents, absl::Time deadline,
                   const fs::path& dir) {
  while (true) {
    absl::StatusOr<wire::AgentList> list = GetAs(client, "/api/v1/agents", wire::ParseAgentList);
    int connected = 0;
    if (list.ok()) {
      for (const wire::AgentSummary& a : list->agents) connected += a.connected ? 1 : 0;
    }
    if (connected >= agents) return true;
    if (absl::Now() > deadline) {
      std::cerr << "cohort: error: only " << connected << " of " << agents
                << " agents connected; see " << (dir / "logs").string() << "\n";
      return false;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

int Up(const UpFlags& flags) {
  const int agents = flags.agents, port = flags.port;
  const std::optional<int>& slots = flags.slots;
  if (!slots && agents > 1) {
    std::cerr << "cohort: error: --gpus gives an agent every GPU of this machine, so it starts "
                 "one agent: drop --agents, or run cohort-agent --gpus LIST yourself per agent\n";
    return kExitInvalid;
  }
  const fs::path dir = client::LocalClusterDir();
  const fs::path record = dir / "cluster.json";
  if (std::optional<int> running = CheckRunningCluster(record, flags)) return *running;
  std::error_code ec;
  fs::create_directories(dir / "logs", ec);
  const std::string url = absl::StrCat("http://127.0.0.1:", port);
  std::vector<pid_t> pids;
  std::vector<std::string> master_argv = {SiblingProgram("cohort-master"), "--port",
                                           std::to_string(port), "--data-dir",
                                           (dir / "master").string()};
  if (!flags.roots.empty()) {
    master_argv.insert(master_argv.end(),
                       {"--checkpoint-storage-roots", absl::StrJoin(flags.roots, ",")});
  }
  const pid_t master = SpawnDaemon(master_argv, dir / "logs" / "master.log");
  pids.push_back(master);
  client::MasterClient client(url, absl::Seconds(2));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!GetAs(client, "/api/v1/info", wire::ParseMasterInfo).ok()) {
    if (!Alive(master) || absl::Now() > deadline) {
      std::cerr << "cohort: error: the master did not start; see "
                << (dir / "logs" / "master.log").string() << " (port " << port
                << " in use? pick another with --port)\n";
      ::kill(master, SIGTERM);
      return kExitInvalid;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::Status login = LogInAsAdmin(client, dir / "master");
  for (pid_t pid : SpawnAgents(agents, slots, url, dir)) pids.push_back(pid);
  std::ofstream(record) << Json{{"url", url}, {"pids", pids}, {"flags", flags.ToJson()}}.dump(2)
                        << "\n";
  if (!login.ok()) {
    std::cerr << "cohort: warning: " << login.message() << "\n";
  } else if (!WaitForAgents(client, agents, deadline, dir)) {
    return kExitInvalid;
  }
  std::cout << "cluster up: master " << url << ", " << agents << " agent(s) of "
            << (slots ? absl::StrCat(*slots, " slot(s)")
                      : std::string("its GPUs as slots (nvidia-smi; its cores if none)"))
            << "; data and logs in " << dir.string() << (login.ok() ? "; logged in as admin" : "")
            << "\n"
            << "cluster up: web interface at " << url << "/ (user admin, password "
            << (fs::exists(dir / "master" / "admin-password")
                    ? "in " + (dir / "master" / "admin-password").string()
                    : std::string("$COHORT_INITIAL_PASSWORD"))
            << ")\n"
            << "(`cohort cluster down` stops it)\n";
  return kExitOk;
}

int Down() {
  const fs::path record = fs::path(client::LocalClusterDir()) / "cluster.json";
  std::ifstream in(record);
  Json cluster = Json::parse(in, nullptr, false);
  if (!cluster.is_object() || !cluster.contains("pids")) {
    std::cerr << "cohort: no local cluster is up (no " << record.string() << ")\n";
    return kExitOk;
  }
  std::vector<pid_t> pids = cluster["pids"].get<std::vector<pid_t>>();
  // Agents first (they stop their trials), then the master.
  for (auto it = pids.rbegin(); it != pids.rend(); ++it) ::kill(*it, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (pid_t pid : pids) {
    while (::kill(pid, 0) == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
    if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
  }
  std::error_code ec;
  fs::remove(record, ec);
  std::cout << "cluster down: stopped " << pids.size() << " process(es)\n";
  return kExitOk;
}

}  // namespace

void AddClusterCommands(CLI::App* root, CommandContext* context) {
  CLI::App* cluster =
      root->add_subcommand("cluster", "A local cluster: a master and agents on this machine");
  cluster->require_subcommand(1);
  auto flags = std::make_shared<UpFlags>();
  auto slots = std::make_shared<int>(2);
  CLI::App* up = cluster->add_subcommand("up", "Start a master and agents in the background");
  up->add_option("--agents", flags->agents, "Agents to start (default 1)")
      ->check(CLI::Range(1, 64));
  auto gpus = std::make_shared<bool>(false);
  CLI::Option* slots_opt = up->add_option("--slots", *slots, "CPU slots per agent (default 2)")
                               ->check(CLI::Range(1, 1024));
  up->add_flag("--gpus", *gpus,
               "The agent offers this machine's GPUs as slots (those nvidia-smi lists; its cores "
               "if none), one per worker, instead of --slots CPU slots")
      ->excludes(slots_opt);
  up->add_option("--port", flags->port, "The master's port (default 8080)")
      ->check(CLI::Range(1, 65535));
  up->add_option("--checkpoint-storage-roots", flags->roots,
                 "Directories (comma-separated, absolute) where experiments may keep checkpoints "
                 "besides the master's own (cohort-master --checkpoint-storage-roots)")
      ->delimiter(',');
  up->add_flag("--replace", flags->replace,
               "When a local cluster runs with other flags, stop it and start this one (without "
               "it, that is an error saying what differs)");
  up->footer(
      "Example:\n  cohort cluster up --agents 2 --slots 1\n"
      "  cohort cluster up --agents 4 --replace   # the running one had 2 agents");
  context->OnRun(up, [=] {
    UpFlags asked = *flags;
    asked.slots = *gpus ? std::nullopt : std::optional<int>(*slots);
    return Up(asked);
  });
  CLI::App* down = cluster->add_subcommand("down", "Stop the local master and agents");
  context->OnRun(down, [] { return Down(); });
}

}  // namespace cohort::cli
