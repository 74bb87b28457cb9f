// The agents' cluster secret: the file the master creates, and the master's real routes served
// by an in-process Master on a loopback port behind AgentSecretAuthenticator: the agent and
// allocation routes answer only callers presenting the secret; the others stay open.
#include "master/http/agent_secret_authenticator.h"

#include <httplib.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/master_client.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/http/routes.h"
#include "master/http/testing/master_server.h"
#include "wire/agent_protocol.h"
#include "wire/states.h"

namespace cohort::master::http {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string TempDir(const char* name) {
  std::string dir = ::testing::TempDir() + "/" + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AgentSecretFileTest, IsCreatedPrivateWith256RandomBitsAndKeptAcrossStarts) {
  const std::string path = TempDir("secret") + "/agent-secret";
  absl::StatusOr<std::string> first = LoadOrCreateAgentSecret(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(*first, MatchesRegex("[0-9a-f]{64}"));
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  absl::StatusOr<std::string> again = LoadOrCreateAgentSecret(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  const std::string other = TempDir("secret") + "/agent-secret";
  EXPECT_NE(LoadOrCreateAgentSecret(other).value(), *first);
}

TEST(AgentSecretFileTest, AFileOthersMayReadIsRefusedSayingHowToFixIt) {
  const std::string path = TempDir("secret") + "/agent-secret";
  std::ofstream(path) << "s3cret\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<std::string> secret = LoadOrCreateAgentSecret(path);
  ASSERT_FALSE(secret.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(secret.status())) << secret.status();
  EXPECT_THAT(secret.status().message(), HasSubstr(absl::StrCat("chmod 600 ", path)));
  EXPECT_EQ(ReadAll(path), "s3cret\n") << "the file is left as it was";
}

TEST(AgentSecretFileTest, ConstantTimeEqualsComparesEveryByteAndTheLength) {
  EXPECT_TRUE(ConstantTimeEquals("abcd", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abce"));
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

std::string Config() {
  return "name: t\nentrypoint: /bin/sh\nhyperparameters: {global_batch_size: 8}\n"
         "resources: {slots_per_trial: 1}\nmax_restarts: 0\n"
         "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n";
}

class AgentSecretRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("agent_secret_routes");
    secret_file_ = dir_ + "/agent-secret";
    secret_ = LoadOrCreateAgentSecret(secret_file_).value();
    server_ = std::make_unique<MasterServer>(
        dir_, MasterServer::Options{
                  .authenticator =
                      std::make_unique<AgentSecretAuthenticator>(secret_, secret_file_)});
    port_ = server_->port();
    ASSERT_GT(port_, 0);
    master_ = &server_->master();
  }

  // A client presenting `secret` (empty: none).
  client::MasterClient Client(const std::string& secret) {
    client::MasterClient client(absl::StrCat("http://127.0.0.1:", port_), absl::Seconds(10));
    client.set_bearer_token(secret);
    return client;
  }
  absl::Status Register(const std::string& secret) {
    wire::AgentRegistration registration{"a1", 1, "127.0.0.1", 29500, 29599, {}};
    return Client(secret).Post("/api/v1/agents", registration.ToJson()).status();
  }
  // Expects `status` to be the refusal that names the secret file.
  void ExpectRefused(const absl::Status& status) {
    EXPECT_TRUE(absl::IsUnauthenticated(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("--secret-file"));
    EXPECT_THAT(status.message(), HasSubstr(secret_file_));
  }
  // An experiment whose context is a real tar.gz; returns its id.
  int64_t CreateExperiment() {
    const std::string made = dir_ + "/ctx.tar.gz";
    const std::string command =
        absl::StrCat("mkdir -p ", dir_, "/ctx && echo x > ", dir_, "/ctx/train.py && tar czf ",
                     made, " -C ", dir_, "/ctx .");
    EXPECT_EQ(std::system(command.c_str()), 0);
    context_ = ReadAll(made);
    absl::StatusOr<int64_t> id = master_->CreateExperiment(Config(), "", context_);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(0);
  }
  wire::TrialDescription FirstTrial(int64_t experiment) {
    const int64_t trial = master_->DescribeExperiment(experiment).value().trials.at(0).id;
    return master_->DescribeTrial(trial).value();
  }

  std::string dir_, secret_file_, secret_, context_;
  std::unique_ptr<MasterServer> server_;
  Master* master_ = nullptr;  // server_'s
  int port_ = 0;
};

TEST_F(AgentSecretRoutesTest, RegistrationWithoutOrWithAWrongSecretIsRefusedNamingTheFile) {
  ExpectRefused(Register(""));
  ExpectRefused(Register(std::string(64, '0')));
  ExpectRefused(Register(secret_ + "0"));
  EXPECT_TRUE(master_->ListAgents().value().agents.empty());
  EXPECT_TRUE(Register(secret_).ok());
  ASSERT_EQ(master_->ListAgents().value().agents.size(), 1u);
}

TEST_F(AgentSecretRoutesTest, PollingAndHeartbeatsNeedTheSecret) {
  ASSERT_TRUE(Register(secret_).ok());
  const std::string poll = "/api/v1/agents/a1/actions?timeout=0";
  ExpectRefused(Client("").Get(poll).status());
  ExpectRefused(Client("wrong").Get(poll).status());
  ExpectRefused(Client("").Post("/api/v1/agents/a1/heartbeat").status());
  EXPECT_TRUE(Client(secret_).Get(poll).ok());
  EXPECT_TRUE(Client(secret_).Post("/api/v1/agents/a1/heartbeat").ok());
}

TEST_F(AgentSecretRoutesTest, ContextDownloadNeedsTheSecret) {
  const int64_t experiment = CreateExperiment();
  const std::string path = absl::StrCat("/api/v1/experiments/", experiment, "/context");
  ExpectRefused(Client("").GetBytes(path).status());
  ExpectRefused(Client("wrong").GetBytes(path).status());
  absl::StatusOr<std::string> archive = Client(secret_).GetBytes(path);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(*archive, context_);
}

TEST_F(AgentSecretRoutesTest, AFakeExitWithoutTheSecretDoesNotEndTheTrial) {
  ASSERT_TRUE(Register(secret_).ok());
  const int64_t experiment = CreateExperiment();
  absl::StatusOr<Json> actions = Client(secret_).Get("/api/v1/agents/a1/actions?timeout=5");
  ASSERT_TRUE(actions.ok()) << actions.status();
  const wire::TrialDescription running = FirstTrial(experiment);
  ASSERT_EQ(running.state, wire::TrialState::kRunning);
  ASSERT_TRUE(running.allocation.has_value());
  const std::string allocation = "/api/v1/allocations/" + *running.allocation;
  const Json exit = wire::ExitReport{0, 0}.ToJson();
  const Json logs = {{"trial_id", running.id}, {"lines", {{{"rank", 0}, {"line", "fake"}}}}};

  ExpectRefused(Client("").Post(allocation + "/exit", exit).status());
  ExpectRefused(Client("wrong").Post(allocation + "/exit", exit).status());
  ExpectRefused(Client("").Post(allocation + "/logs", logs).status());
  ExpectRefused(Client("").Post(allocation + "/reports", {{"trial_id", running.id}}).status());
  EXPECT_EQ(FirstTrial(experiment).state, wire::TrialState::kRunning);

  EXPECT_TRUE(Client(secret_).Post(allocation + "/exit", exit).ok());
  EXPECT_NE(FirstTrial(experiment).state, wire::TrialState::kRunning);
}

TEST_F(AgentSecretRoutesTest, UsersRoutesStayOpen) {
  CreateExperiment();
  EXPECT_TRUE(Client("").Get("/api/v1/experiments").ok());
  EXPECT_TRUE(Client("").Get("/api/v1/agents").ok());
  EXPECT_TRUE(Client("wrong").Get("/api/v1/trials/1").ok());
}

}  // namespace
}  // namespace cohort::master::http
