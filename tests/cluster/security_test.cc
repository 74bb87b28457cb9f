// Issue 34's attacks on a real cluster, as an ordinary user (or anyone who can reach the port)
// would make them: a real cohort-master, a real cohort-agent, shell-script trials, the real
// `cohort` CLI and raw sockets. Each test fails on the code before the fix.
//   * A trial must not reach the master's own files through its checkpoint storage (read with
//     `checkpoint download`, delete through the checkpoint GC, a kill or `experiment delete`).
//   * An unauthenticated request costs the master its head, never its body.
//   * A flood of wrong logins neither starves the other requests nor goes unanswered.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/cluster_fixture.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;

class SecurityTest : public ClusterFixture {
 protected:
  SecurityTest() : ClusterFixture("security_test") {}

  // The files of the master's data directory that must survive every attack.
  void ExpectMastersFilesIntact() {
    for (const char* name : {"master.db", "agent-secret", "admin-password", "contexts"}) {
      EXPECT_TRUE(fs::exists(dir_ / "master" / name)) << name << " of the master is gone";
    }
  }
};

// The reported attack. An experiment naming the master's data directory's parent as its
// checkpoint storage is refused at creation, naming the allowed roots. A trial in the default
// storage plants a link to the master's data directory and reports it as checkpoint m1:
// `checkpoint download m1` gets nothing of it, and neither the checkpoint GC when the trial
// ends, a kill, nor deleting the experiment removes anything of the master's.
TEST_F(SecurityTest, ATrialCannotReadOrDeleteTheMastersFilesThroughItsCheckpoints) {
  StartMaster();
  StartAgent("a1");
  const fs::path storage = dir_ / "master" / "checkpoints";
  Script("steal.sh", absl::StrCat("ln -sfn ", (dir_ / "master").string(), " ", storage.string(),
                                  "/m1\n",
                                  "echo '{\"kind\":\"checkpoint\",\"storage_id\":\"m1\",\"path\":\"",
                                  storage.string(), "/m1\",\"steps_completed\":1}' >> "
                                  "\"$COHORT_RUN_DIR/metrics.jsonl\"\n",
                                  "exec sleep ${STEAL_SLEEP:-2}\n"));
  // 1. The data directory's parent as the storage: refused, nothing created.
  const fs::path config = dir_ / "parent.yaml";
  std::ofstream(config) << "name: parent\nentrypoint: ./steal.sh\n"
                        << "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n"
                        << "checkpoint_storage: {type: shared_fs, host_path: " << dir_.string()
                        << "}\n";
  LaunchResult refused =
      Cohort({"experiment", "create", config.string(), (dir_ / "context").string()});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("checkpoint_storage.host_path"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(storage.string()), std::string::npos) << "names the allowed root";
  EXPECT_NE(refused.err.find("--checkpoint-storage-roots"), std::string::npos) << refused.err;
  EXPECT_EQ(Json({"experiment", "list"})["experiments"].size(), 0u);

  // 2. A link planted in the default storage, reported; the save_* counts let it go at the end.
  const std::string gc = "checkpoint_storage: {save_experiment_best: 0, save_trial_best: 0, "
                         "save_trial_latest: 0}\nmax_restarts: 0\n";
  const int64_t ended = Create("ended", "./steal.sh", gc);
  WaitUntil([&] { return Trial(ended).value("latest_checkpoint", "") == "m1"; }, "the report");
  LaunchResult download = Cohort({"checkpoint", "download", "m1", (dir_ / "loot").string()});
  EXPECT_NE(download.status, 0);
  EXPECT_NE(download.err.find("symbolic link"), std::string::npos) << download.err;
  EXPECT_FALSE(fs::exists(dir_ / "loot" / "master.db"));
  WaitUntil([&] { return State(ended) == "COMPLETED"; }, "the experiment to end (GC)");
  ExpectMastersFilesIntact();
  EXPECT_NE(Logs(std::stoll(TrialId(ended))).find("checkpoint m1 (batch 1) kept"),
            std::string::npos);

  // 3. Killed while it runs, then deleted.
  const int64_t killed = Create("killed", "./steal.sh", gc + "environment: "
                                                             "{environment_variables: "
                                                             "[STEAL_SLEEP=600]}\n");
  WaitUntil([&] { return Trial(killed).value("latest_checkpoint", "") == "m1"; }, "the report");
  EXPECT_EQ(Cohort({"experiment", "kill", std::to_string(killed)}).status, 0);
  WaitUntil([&] { return State(killed) == "CANCELED"; }, "the kill");
  for (int64_t id : {ended, killed}) {
    EXPECT_EQ(Cohort({"experiment", "delete", std::to_string(id), "--yes"}).status, 0);
  }
  WaitUntil([&] { return Json({"experiment", "list", "--all"})["experiments"].empty(); },
            "both experiments to be deleted");
  ExpectMastersFilesIntact();
  // Listing still works: the database is whole.
  EXPECT_EQ(Cohort({"experiment", "list"}).status, 0);
}

// The master's data directory is its user's alone (0700), its database 0600; an agent's run
// of a trial keeps the environment's values in a config.yaml only its user reads (0600), in a
// directory of mode 0700. Before, 0755 / 0644 / 0644: any local user read every secret. And a
// trial's terminal escapes reach `trial logs` escaped.
TEST_F(SecurityTest, TheMastersAndTheAgentsFilesAreTheirUsersAlone) {
  StartMaster();
  StartAgent("a1");
  Script("ok.sh", "printf 'bold \\033[1m done\\n'\nexit 0\n");
  const int64_t id = Create("env", "./ok.sh", "environment: {environment_variables: [K=v]}\n");
  WaitUntil([&] { return State(id) == "COMPLETED"; }, "the experiment to complete");
  // What the trial printed reaches the terminal escaped (`trial logs`), never as an escape.
  const std::string logs = Logs(std::stoll(TrialId(id)));
  EXPECT_NE(logs.find("bold \\x1b[1m done"), std::string::npos) << logs;
  EXPECT_EQ(logs.find('\x1b'), std::string::npos);
  const auto mode = [](const fs::path& p) { return fs::status(p).permissions(); };
  EXPECT_EQ(mode(dir_ / "master"), fs::perms::owner_all);
  EXPECT_EQ(mode(dir_ / "master" / "master.db"), fs::perms::owner_read | fs::perms::owner_write);
  int configs = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "a1")) {
    if (entry.path().filename() != "config.yaml") continue;
    ++configs;
    EXPECT_EQ(mode(entry.path()), fs::perms::owner_read | fs::perms::owner_write)
        << entry.path();
    EXPECT_EQ(mode(entry.path().parent_path()), fs::perms::owner_all) << entry.path();
  }
  EXPECT_GT(configs, 0);
}

// Sends a chunked POST of up to `bytes` to the master without credentials, as fast as it is
// taken (each send may wait 5 s); returns what came back.
std::string UnauthenticatedUpload(int port, const std::string& path, size_t bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string head =
        absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                    "multipart/form-data; boundary=x\r\nTransfer-Encoding: "
                                    "chunked\r\n\r\n");
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string chunk = absl::StrCat("100000\r\n", std::string(1 << 20, 'z'), "\r\n");
    for (size_t sent = 0; sent < bytes; sent += 1 << 20) {
      if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(chunk.size())) {
        break;
      }
    }
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) answer.append(buffer, n);
  }
  ::close(fd);
  return answer;
}

// Eight concurrent unauthenticated 100 MB chunked uploads to POST /api/v1/experiments (and
// eight chunked logins of 10 MB): the uploads are answered 401 from their heads, the logins cut
// at the open routes' 16 KiB, and the master's
// resident memory grows by less than 32 MiB. Before, it read every body first: 120 MB -> 1.2 GB.
TEST_F(SecurityTest, UnauthenticatedBodiesCostTheMasterNoMemory) {
  StartMaster();
  const int64_t before = Rss(master_->pid());
  ASSERT_GT(before, 0);
  std::vector<std::string> answers(16);
  std::vector<std::thread> senders;
  for (int i = 0; i < 16; ++i) {
    senders.emplace_back([&, i] {
      answers[i] = i < 8 ? UnauthenticatedUpload(port_, "/api/v1/experiments", 100 << 20)
                         : UnauthenticatedUpload(port_, "/api/v1/auth/login", 10 << 20);
    });
  }
  // The master's resident memory, sampled while the uploads run (its VmHWM already holds the
  // 64 MiB of the first admin's password hash, made at its start).
  std::atomic<bool> sending{true};
  std::atomic<int64_t> peak{before};
  std::thread sampler([&] {
    while (sending) {
      const int64_t now = Rss(master_->pid());
      if (now > peak) peak = now;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (std::thread& t : senders) t.join();
  sending = false;
  sampler.join();
  Drain();
  for (int i = 0; i < 8; ++i) {
    EXPECT_NE(answers[i].find("HTTP/1.1 401"), std::string::npos)
        << i << ": " << answers[i].substr(0, 200);
  }
  for (int i = 8; i < 16; ++i) {  // cut at 16 KiB: the connection closed, nothing logged in
    EXPECT_EQ(answers[i].find("HTTP/1.1 200"), std::string::npos) << answers[i].substr(0, 200);
  }
  std::printf("the master's resident memory: %.1f MiB before, at most %.1f MiB during\n",
              static_cast<double>(before) / (1 << 20), static_cast<double>(peak) / (1 << 20));
  EXPECT_LT(peak - before, int64_t{32} << 20)
      << "the master's memory grew from " << before << " to " << peak.load() << " bytes";
  EXPECT_EQ(Cohort({"experiment", "list"}).status, 0) << "the master still serves";
}

// 100 concurrent wrong-password logins, from 100 loopback addresses (so no address is throttled
// yet), while a logged-in client lists experiments: the logins
// beyond the hash pool's queue are answered 503 at once, and no list waits for them (each
// answers within 2 s; before, 6.5 s, queued behind the logins' password hashing).
TEST_F(SecurityTest, ALoginFloodNeitherStarvesOthersNorGoesUnanswered) {
  StartMaster();
  const std::string token = [&] {
    httplib::Client login("127.0.0.1", port_);
    httplib::Result r = login.Post(
        "/api/v1/auth/login",
        absl::StrCat(R"({"username": "admin", "password": ")", admin_password_, R"("})"),
        "application/json");
    return r && r->status == 200 ? nlohmann::json::parse(r->body)["token"].get<std::string>()
                                 : std::string();
  }();
  ASSERT_FALSE(token.empty());
  std::atomic<int> unavailable{0}, refused{0}, other{0}, finished{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 100; ++i) {
    flood.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port_);
      c.set_interface(absl::StrCat("127.0.0.", 2 + i));  // 100 addresses, as an attack would
      c.set_read_timeout(30, 0);
      for (int n = 0; n < 3; ++n) {
        httplib::Result r = c.Post(
            "/api/v1/auth/login",
            absl::StrCat(R"({"username": "user)", i, R"(", "password": "wrong-password"})"),
            "application/json");
        const int status = r ? r->status : 0;
        (status == 503 ? unavailable : status == 401 || status == 429 ? refused : other)++;
      }
      ++finished;
    });
  }
  double slowest = 0;
  int lists = 0;
  httplib::Client client("127.0.0.1", port_);
  client.set_bearer_token_auth(token);
  while (finished < 100 || lists < 20) {  // all through the flood
    const auto start = std::chrono::steady_clock::now();
    httplib::Result r = client.Get("/api/v1/experiments");
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                              start).count());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    ++lists;
  }
  for (std::thread& t : flood) t.join();
  EXPECT_GT(unavailable.load(), 0) << "past the hash pool's queue, logins are answered 503";
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(other.load(), 0);
  std::printf("login flood: %d answered 503, %d refused (401/429); the slowest of %d lists "
              "took %.3f s\n",
              unavailable.load(), refused.load(), lists, slowest);
  EXPECT_LT(slowest, 2.0) << "an authenticated request waited behind the logins";
}

}  // namespace
}  // namespace cohort::testing
