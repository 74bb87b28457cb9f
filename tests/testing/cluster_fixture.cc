#include "tests/testing/cluster_fixture.h"

#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/master_client.h"
#include "common/private_file.h"
#include "common/testing/status_matchers.h"
#include "tests/testing/worker_group.h"

namespace cohort::testing {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

bool Alive(pid_t pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

namespace {

// The value of `field` ("VmHWM:") in /proc/PID/status, in bytes; 0 when unreadable.
int64_t StatusBytes(pid_t pid, absl::string_view field) {
  for (absl::string_view line :
       absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
    if (absl::ConsumePrefix(&line, field)) {
      int64_t kib = 0;
      if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kib)) {
        return kib * 1024;
      }
    }
  }
  return 0;
}

}  // namespace

int64_t PeakRss(pid_t pid) { return StatusBytes(pid, "VmHWM:"); }

int64_t Rss(pid_t pid) { return StatusBytes(pid, "VmRSS:"); }

std::vector<int> OneTo(int n) {
  std::vector<int> all;
  for (int i = 1; i <= n; ++i) all.push_back(i);
  return all;
}

void ClusterFixture::SetUp() {
  dir_ = fs::path(::testing::TempDir()) /
         absl::StrCat(name_, "_", ::getpid(), "_",
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir_);
  fs::create_directories(dir_ / "context");
}

void ClusterFixture::TearDown() {
  agents_.clear();  // SIGKILL: their launchers and workers die with them
  // A trial's background child outlives a SIGKILLed agent until the agent starts again.
  for (pid_t pid : Pids()) {
    if (Alive(pid)) ::kill(pid, SIGKILL);
  }
  master_.reset();
  fs::remove_all(dir_);
}

std::vector<std::string> ClusterFixture::MasterArgv(const std::string& data_dir, int port,
                                                    const std::vector<std::string>& extra) const {
  std::vector<std::string> argv = master_exec_;
  argv.insert(argv.end(),
              {BinaryPath("cohort-master"), "--port", std::to_string(port), "--data-dir",
               (dir_ / data_dir).string(), "--agent-timeout", std::to_string(agent_timeout_)});
  if (!master_host_.empty()) argv.insert(argv.end(), {"--host", master_host_});
  argv.insert(argv.end(), database_flags_.begin(), database_flags_.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

void ClusterFixture::StartMaster(const std::vector<std::string>& extra, const std::string& data_dir,
                                 int port) {
  master_ = std::make_unique<LauncherProcess>(MasterArgv(data_dir, port, extra));
  ASSERT_TRUE(master_->WaitFor(
      [](const std::string& out, const std::string&) {
        return out.find("listening on http://") != std::string::npos;
      },
      absl::Seconds(30)))
      << "the master did not say it listens: " << master_->err();
  const std::string& out = master_->out();
  const size_t at = out.find("listening on ") + 13;
  url_ = out.substr(at, out.find(' ', at) - at);
  port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
  // A master on a new database writes its first admin's password in its data directory; one
  // on a copy of another's (a backup) has that one's admin, whose password the test knows.
  absl::StatusOr<std::string> password =
      ReadSecretFile((dir_ / data_dir / "admin-password").string());
  if (absl::IsNotFound(password.status()) && !admin_password_.empty()) return;
  ASSERT_OK(password);
  admin_password_ = *password;
}

void ClusterFixture::KillMaster() {
  ::kill(master_->pid(), SIGKILL);
  master_->Wait(absl::Seconds(10));
}

void ClusterFixture::RestartMaster() { StartMaster({"--readopt-grace", "20"}, "master", port_); }

std::vector<std::string> ClusterFixture::AgentArgv(const std::string& id,
                                                   const std::string& work_dir,
                                                   const std::vector<std::string>& extra) const {
  std::vector<std::string> argv;
  if (auto exec = agent_exec_.find(id); exec != agent_exec_.end()) argv = exec->second;
  argv.insert(argv.end(), {BinaryPath("cohort-agent"), "--master", url_, "--id", id, "--slots", "1",
                           "--work-dir", work_dir, "--secret-file",
                           (dir_ / "master" / "agent-secret").string()});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

LauncherProcess& ClusterFixture::StartAgent(const std::string& id,
                                            const std::vector<std::string>& extra) {
  agents_.push_back(std::make_unique<LauncherProcess>(AgentArgv(id, (dir_ / id).string(), extra)));
  LauncherProcess& agent = *agents_.back();
  WaitUntil([&] { return Connected(id); }, "agent " + id + " to connect");
  if (::testing::Test::HasFailure()) {
    ADD_FAILURE() << "agent " << id << ": " << agent.err() << "\nagents: " << last_agents_;
  }
  return agent;
}

bool ClusterFixture::Connected(const std::string& id) {
  const json list = Json({"agent", "list"});
  last_agents_ = list.dump();
  if (!list.contains("agents")) return false;
  for (const json& a : list["agents"]) {
    if (a["id"] == id && a["connected"].get<bool>()) return true;
  }
  return false;
}

std::vector<std::string> ClusterFixture::CohortArgv(std::vector<std::string> args) const {
  std::vector<std::string> argv = master_exec_;
  argv.insert(argv.end(), {BinaryPath("cohort"), "-m", url_});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::map<std::string, std::optional<std::string>> ClusterFixture::CohortEnv() const {
  return {{"XDG_CONFIG_HOME", (dir_ / "config").string()},
          {"COHORT_USER", "admin"},
          {"COHORT_PASSWORD", admin_password_}};
}

LaunchResult ClusterFixture::Cohort(std::vector<std::string> args, absl::Duration timeout) {
  return RunToCompletion(CohortArgv(std::move(args)), CohortEnv(), timeout);
}

json ClusterFixture::Json(std::vector<std::string> args) {
  args.push_back("--json");
  LaunchResult r = Cohort(args);
  EXPECT_EQ(r.status, 0) << r.err;
  json parsed = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << r.out;
  return parsed;
}

void ClusterFixture::WaitUntil(const std::function<bool()>& done, const std::string& what,
                               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    ASSERT_LT(absl::Now(), deadline)
        << "timed out after " << absl::FormatDuration(timeout) << " waiting for " << what;
    Drain();
  }
}

void ClusterFixture::Drain() {
  const auto never = [](const std::string&, const std::string&) { return false; };
  if (master_ != nullptr) master_->WaitFor(never, absl::Milliseconds(50));
  for (auto& agent : agents_) agent->WaitFor(never, absl::Milliseconds(50));
  absl::SleepFor(absl::Milliseconds(100));
}

void ClusterFixture::Script(const std::string& name, const std::string& body) {
  const fs::path path = dir_ / "context" / name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  ::chmod(path.c_str(), 0755);
}

int64_t ClusterFixture::Create(const std::string& name, const std::string& entrypoint,
                               const std::string& extra) {
  const fs::path config = dir_ / (name + ".yaml");
  std::ofstream(config) << "name: " << name << "\nentrypoint: " << entrypoint << "\n"
                        << "hyperparameters: {global_batch_size: 16}\n"
                        << "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
                        << extra;
  LaunchResult r = Cohort({"experiment", "create", config.string(), (dir_ / "context").string()});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const size_t at = r.out.find("created experiment ");
  if (at == std::string::npos) return -1;
  return std::stoll(r.out.substr(at + 19));
}

std::string ClusterFixture::State(int64_t experiment) {
  return Json({"experiment", "describe", std::to_string(experiment)}).value("state", "");
}

json ClusterFixture::Trial(int64_t experiment) {
  const json e = Json({"experiment", "describe", std::to_string(experiment)});
  if (!e.contains("trials") || e["trials"].empty()) return json::object();
  return e["trials"][0];
}

std::string ClusterFixture::TrialId(int64_t experiment) {
  return std::to_string(Trial(experiment).value("id", int64_t{-1}));
}

std::string ClusterFixture::Logs(int64_t trial) {
  LaunchResult r = Cohort({"trial", "logs", std::to_string(trial)});
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

std::vector<int> ClusterFixture::Numbered(const std::string& logs, const std::string& word) {
  std::vector<int> numbers;
  for (absl::string_view line : absl::StrSplit(logs, '\n')) {
    const size_t at = line.rfind(word + " ");
    if (at == absl::string_view::npos || (at > 0 && line[at - 1] != ' ' && line[at - 1] != ']')) {
      continue;
    }
    int n = 0;
    if (absl::SimpleAtoi(line.substr(at + word.size() + 1), &n)) numbers.push_back(n);
  }
  return numbers;
}

std::vector<int> ClusterFixture::SeriesBatches(int64_t trial, const std::string& series) {
  std::vector<int> batches;
  const json all = Json({"trial", "metrics", std::to_string(trial)});
  if (!all.contains("series")) return batches;
  for (const json& one : all["series"]) {
    if (one["name"] != series) continue;
    for (const json& point : one["points"]) batches.push_back(point[0].get<int>());
  }
  return batches;
}

std::vector<pid_t> ClusterFixture::Pids() {
  std::vector<pid_t> pids;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir_ / "pids"), '\n')) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(line, &pid)) pids.push_back(pid);
  }
  return pids;
}

void ClusterFixture::PidsScript(const std::string& name, bool stubborn) {
  const std::string pids = (dir_ / "pids").string();
  Script(name, absl::StrCat(stubborn ? "trap '' TERM\n" : "", "echo $PPID >> ", pids,
                            "\necho $$ >> ", pids, "\nsleep 600 &\necho $! >> ", pids,
                            "\necho started\nwait\nsleep 600\n"));
}

}  // namespace cohort::testing
