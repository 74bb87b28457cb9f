// Who may call what: the agents' secret file, and the master's real routes served by an
// in-process Master on a loopback port behind ClusterAuthenticator: users' routes need a login
// token (admins' routes an admin's), experiments change only by their owner or an admin, agent
// routes need the cluster secret, and an allocation's routes take only that allocation's token
// while it runs.
#include "master/http/cluster_authenticator.h"

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
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "config/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/http/routes.h"
#include "master/http/session_cookie.h"
#include "master/http/testing/master_server.h"
#include "wire/agent_protocol.h"
#include "wire/states.h"
#include "wire/user_bodies.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(AgentSecretFileTest, IsCreatedPrivateWith256RandomBitsAndKeptAcrossStarts) {
  const TempDir dir("secret");
  const std::string path = dir.Join("agent-secret");
  absl::StatusOr<std::string> first = LoadOrCreateAgentSecret(path);
  ASSERT_OK(first);
  EXPECT_THAT(*first, MatchesRegex("[0-9a-f]{64}"));
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  absl::StatusOr<std::string> again = LoadOrCreateAgentSecret(path);
  ASSERT_OK(again);
  EXPECT_EQ(*again, *first);
  const TempDir other_dir("secret");
  const std::string other = other_dir.Join("agent-secret");
  EXPECT_NE(LoadOrCreateAgentSecret(other).value(), *first);
}

TEST(AgentSecretFileTest, AFileOthersMayReadIsRefusedSayingHowToFixIt) {
  const TempDir dir("secret");
  const std::string path = dir.Join("agent-secret");
  std::ofstream(path) << "s3cret\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<std::string> secret = LoadOrCreateAgentSecret(path);
  ASSERT_FALSE(secret.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(secret.status())) << secret.status();
  EXPECT_THAT(secret.status().message(), HasSubstr(absl::StrCat("chmod 600 ", path)));
  EXPECT_EQ(ReadFileBytes(path), "s3cret\n") << "the file is left as it was";
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

constexpr char kAdminPassword[] = "admin-password";

class AuthRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    secret_file_ = dir_ + "/agent-secret";
    secret_ = LoadOrCreateAgentSecret(secret_file_).value();
    server_ = std::make_unique<MasterServer>(
        dir_, MasterServer::Options{.authenticator = [this](Master& m) {
          return MakeClusterAuthenticator(m, secret_, secret_file_, dir_ + "/admin-password");
        }});
    port_ = server_->port();
    ASSERT_GT(port_, 0);
    master_ = &server_->master();
    ASSERT_TRUE(master_->users().EnsureAdmin(kAdminPassword).value());
    admin_ = Login("admin", kAdminPassword);
    const std::string made = dir_ + "/ctx.tar.gz";
    const std::string command =
        absl::StrCat("mkdir -p ", dir_, "/ctx && echo x > ", dir_, "/ctx/train.py && tar czf ",
                     made, " -C ", dir_, "/ctx .");
    ASSERT_EQ(std::system(command.c_str()), 0);
    context_ = ReadFileBytes(made);
  }

  // A client presenting `credential` (empty: none).
  client::MasterClient Client(const std::string& credential) {
    client::MasterClient client(absl::StrCat("http://127.0.0.1:", port_), absl::Seconds(10));
    client.set_bearer_token(credential);
    return client;
  }
  std::string Login(const std::string& name, const std::string& password) {
    absl::StatusOr<Json> r =
        Client("").Post("/api/v1/auth/login", wire::LoginRequest{name, password}.ToJson());
    EXPECT_OK(r);
    return r.ok() ? wire::ParseLoginResponse(*r).value().token : "";
  }
  // Creates the user `name` (password NAME-password) and logs in as it.
  std::string NewUser(const std::string& name) {
    absl::StatusOr<Json> r = Client(admin_).Post(
        "/api/v1/users", wire::NewUser{name, name + "-password", false}.ToJson());
    EXPECT_OK(r);
    return Login(name, name + "-password");
  }
  absl::Status Register(const std::string& secret, int slots = 1) {
    wire::AgentRegistration registration{"a1", slots, "127.0.0.1", 29500, 29599, {}};
    return Client(secret).Post("/api/v1/agents", registration.ToJson()).status();
  }
  // An experiment created over HTTP by the holder of `token`; its id.
  int64_t CreateExperiment(const std::string& token) {
    absl::StatusOr<Json> r = Client(token).PostForm(
        "/api/v1/experiments", {{"config", Config(), "", ""},
                                {"context", context_, "context.tar.gz", "application/gzip"}});
    EXPECT_OK(r);
    return r.ok() ? wire::ParseCreatedExperiment(*r).value().id : 0;
  }
  wire::TrialDescription FirstTrial(int64_t experiment) {
    const int64_t trial =
        master_->DescribeExperiment(experiment, Actor{"admin", true}).value().trials.at(0).id;
    return master_->DescribeTrial(trial).value();
  }
  // Two experiments' trials started on agent a1 (2 slots): the experiments and the start
  // actions, in the order the master sent them.
  struct TwoStarts {
    int64_t first = 0, second = 0;
    wire::StartAction a, b;
  };
  void StartTwoTrials(TwoStarts* out) {
    ASSERT_OK(Register(secret_, /*slots=*/2));
    out->first = CreateExperiment(admin_);
    out->second = CreateExperiment(admin_);
    absl::StatusOr<Json> actions = Client(secret_).Get("/api/v1/agents/a1/actions?timeout=5");
    ASSERT_OK(actions);
    const std::vector<absl::StatusOr<wire::Action>> batch =
        wire::ParseActionBatch(*actions).value();
    ASSERT_EQ(batch.size(), 2u) << actions->dump();
    out->a = std::get<wire::StartAction>(batch[0].value());
    out->b = std::get<wire::StartAction>(batch[1].value());
  }
  // Expects `status` to be the agents' refusal that names the secret file.
  void ExpectAgentRefusal(const absl::Status& status) {
    EXPECT_TRUE(absl::IsUnauthenticated(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("--secret-file"));
    EXPECT_THAT(status.message(), HasSubstr(secret_file_));
  }

  const TempDir temp_{"auth_routes"};  // outlives server_
  const std::string dir_ = temp_.path();
  std::string secret_file_, secret_, context_, admin_;
  std::unique_ptr<MasterServer> server_;
  Master* master_ = nullptr;  // server_'s
  int port_ = 0;
};

// Every users' route, as (method, path).
const std::vector<std::pair<std::string, std::string>>& UserRoutes() {
  static const auto* routes = new std::vector<std::pair<std::string, std::string>>{
      {"GET", "/api/v1/experiments"},
      {"POST", "/api/v1/experiments"},
      {"GET", "/api/v1/experiments/1"},
      {"POST", "/api/v1/experiments/1/kill"},
      {"POST", "/api/v1/experiments/1/pause"},
      {"DELETE", "/api/v1/experiments/1"},
      {"GET", "/api/v1/trials/1"},
      {"POST", "/api/v1/trials/1/kill"},
      {"GET", "/api/v1/trials/1/metrics"},
      {"GET", "/api/v1/trials/1/checkpoints"},
      {"GET", "/api/v1/trials/1/logs"},
      {"GET", "/api/v1/templates"},
      {"GET", "/api/v1/templates/t"},
      {"PUT", "/api/v1/templates/t"},
      {"DELETE", "/api/v1/templates/t"},
      {"GET", "/api/v1/agents"},
      {"POST", "/api/v1/agents/a1/disable"},
      {"GET", "/api/v1/slots"},
      {"GET", "/api/v1/tasks"},
      {"GET", "/api/v1/me"},
      {"POST", "/api/v1/auth/logout"},
      {"GET", "/api/v1/users"},
      {"POST", "/api/v1/users"},
      {"POST", "/api/v1/users/admin/deactivate"},
      {"POST", "/api/v1/users/admin/password"},
      {"GET", "/api/v1/trials/1/series"},
      {"GET", "/api/v1/trials/1/series/data?name=x"},
      {"GET", "/api/v1/experiments/1/series/data?name=x"}};
  return *routes;
}

httplib::Result Send(httplib::Client& client, const std::string& method, const std::string& path) {
  if (method == "GET") return client.Get(path);
  if (method == "PUT") return client.Put(path, "a: 1", "application/yaml");
  if (method == "DELETE") return client.Delete(path);
  return client.Post(path, "{}", "application/json");
}

TEST_F(AuthRoutesTest, EveryUsersRouteWithoutAValidTokenIs401SayingWhatToDo) {
  httplib::Client client("127.0.0.1", port_);
  for (const auto& [method, path] : UserRoutes()) {
    const std::string route = method + " " + path;
    client.set_bearer_token_auth("");
    httplib::Result none = Send(client, method, path);
    ASSERT_TRUE(none) << route;
    EXPECT_EQ(none->status, 401) << route;
    EXPECT_THAT(none->body, HasSubstr("cohort user login")) << route;
    EXPECT_THAT(none->body, HasSubstr("\"error\"")) << route;
    client.set_bearer_token_auth(secret_);
    httplib::Result agent = Send(client, method, path);
    EXPECT_EQ(agent->status, 401) << route << " with the agents' secret";
    EXPECT_THAT(agent->body, HasSubstr("for users, not agents")) << route;
    client.set_bearer_token_auth(std::string(64, 'f'));
    httplib::Result made_up = Send(client, method, path);
    EXPECT_EQ(made_up->status, 401) << route << " with a made-up token";
    EXPECT_THAT(made_up->body, HasSubstr("not valid")) << route;
  }
  EXPECT_TRUE(master_->ListExperiments().value().experiments.empty());
  EXPECT_OK(Client("").Get("/api/v1/info")) << "the master's info is open";
}

TEST_F(AuthRoutesTest, AdminsRoutesRefuseOtherUsersWith403) {
  const std::string alice = NewUser("alice");
  EXPECT_OK(Client(alice).Get("/api/v1/experiments"));
  for (const char* path :
       {"/api/v1/users", "/api/v1/agents/a1/disable", "/api/v1/users/admin/deactivate"}) {
    absl::Status status =
        Client(alice).Post(path, wire::NewUser{"x", "long-enough"}.ToJson()).status();
    EXPECT_THAT(status.message(), HasSubstr("is for admins")) << path << ": " << status;
  }
  httplib::Client raw("127.0.0.1", port_);
  raw.set_bearer_token_auth(alice);
  EXPECT_EQ(raw.Put("/api/v1/templates/t", "max_restarts: 1", "application/yaml")->status, 403);
  EXPECT_EQ(raw.Get("/api/v1/users")->status, 403);
  EXPECT_OK(Client(admin_).Put("/api/v1/templates/t", "max_restarts: 1", "application/yaml"));
}

TEST_F(AuthRoutesTest, AUserChangesOnlyTheirOwnExperiments) {
  const std::string alice = NewUser("alice");
  const std::string bob = NewUser("bob");
  const int64_t experiment = CreateExperiment(alice);
  ASSERT_GT(experiment, 0);
  EXPECT_EQ(master_->ListExperiments().value().experiments.at(0).owner, "alice");
  httplib::Client raw("127.0.0.1", port_);
  raw.set_bearer_token_auth(bob);
  const std::string kill = absl::StrCat("/api/v1/experiments/", experiment, "/kill");
  httplib::Result denied = raw.Post(kill, "{}", "application/json");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  EXPECT_THAT(denied->body, HasSubstr("belongs to 'alice'"));
  EXPECT_EQ(FirstTrial(experiment).state, wire::TrialState::kQueued) << "nothing changed";
  const std::string kill_trial =
      absl::StrCat("/api/v1/trials/", FirstTrial(experiment).id, "/kill");
  httplib::Result trial_denied = raw.Post(kill_trial, "{}", "application/json");
  ASSERT_TRUE(trial_denied);
  EXPECT_EQ(trial_denied->status, 403);
  EXPECT_THAT(trial_denied->body, HasSubstr("belongs to 'alice'"));
  EXPECT_EQ(FirstTrial(experiment).state, wire::TrialState::kQueued) << "nothing changed";
  EXPECT_OK(Client(alice).Post(absl::StrCat("/api/v1/experiments/", experiment, "/pause")));
  EXPECT_OK(Client(admin_).Post(kill)) << "admins change anyone's";
  // Deleting: only the owner (or an admin), and only once it has ended; 404 for no experiment.
  const std::string path = absl::StrCat("/api/v1/experiments/", experiment);
  httplib::Result delete_denied = raw.Delete(path);
  ASSERT_TRUE(delete_denied);
  EXPECT_EQ(delete_denied->status, 403);
  EXPECT_THAT(delete_denied->body, HasSubstr("only its owner or an admin may delete it"));
  httplib::Result unknown = raw.Delete("/api/v1/experiments/77");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_OK(Client(alice).Delete(path)) << "the owner deletes her killed experiment";
}

// A fork (a `parent` part instead of the config and context) copies the parent's code and
// config: only for its owner or an admin.
TEST_F(AuthRoutesTest, OnlyTheOwnerOrAnAdminForksAnExperiment) {
  const std::string alice = NewUser("alice");
  const std::string bob = NewUser("bob");
  const int64_t parent = CreateExperiment(alice);
  ASSERT_GT(parent, 0);
  const std::vector<client::FormPart> fork = {{"parent", absl::StrCat(parent), "", ""}};
  absl::Status denied = Client(bob).PostForm("/api/v1/experiments", fork).status();
  EXPECT_THAT(denied.message(), HasSubstr("only its owner or an admin may fork it"));
  absl::Status bad =
      Client(alice).PostForm("/api/v1/experiments", {{"parent", "seven", "", ""}}).status();
  EXPECT_THAT(bad.message(), HasSubstr("the `parent` part must be an experiment id, got 'seven'"));
  absl::StatusOr<Json> child = Client(alice).PostForm("/api/v1/experiments", fork);
  ASSERT_OK(child);
  const int64_t id = wire::ParseCreatedExperiment(*child).value().id;
  const Actor admin{"admin", true};
  EXPECT_EQ(master_->DescribeExperiment(id, admin).value().owner, "alice");
  // The parent's effective config, its experiment_seed included (the child's has the storage's
  // defaults filled in too).
  const Json mine =
      config::ParseYaml(master_->DescribeExperiment(id, admin).value().config).value();
  const Json its =
      config::ParseYaml(master_->DescribeExperiment(parent, admin).value().config).value();
  for (const char* field : {"reproducibility", "searcher", "hyperparameters", "entrypoint"}) {
    EXPECT_EQ(mine[field], its[field]) << field;
  }
  EXPECT_EQ(mine["checkpoint_storage"]["host_path"], its["checkpoint_storage"]["host_path"]);
}

TEST_F(AuthRoutesTest, RevokedExpiredAndDeactivatedCredentialsAre401) {
  const std::string alice = NewUser("alice");
  const std::string second = Login("admin", kAdminPassword);
  ASSERT_OK(Client(second).Post("/api/v1/auth/logout"));
  absl::Status revoked = Client(second).Get("/api/v1/me").status();
  EXPECT_TRUE(absl::IsUnauthenticated(revoked)) << revoked;
  EXPECT_OK(Client(admin_).Get("/api/v1/me")) << "logout revokes only that token";

  ASSERT_OK(Client(admin_).Post("/api/v1/users/alice/deactivate"));
  absl::Status gone = Client(alice).Get("/api/v1/experiments").status();
  EXPECT_TRUE(absl::IsUnauthenticated(gone)) << "deactivating revokes the user's tokens: " << gone;
  absl::Status login =
      Client("")
          .Post("/api/v1/auth/login", wire::LoginRequest{"alice", "alice-password"}.ToJson())
          .status();
  EXPECT_TRUE(absl::IsUnauthenticated(login)) << login;

  server_->clock().Advance(absl::Hours(24 * 7));
  absl::Status expired = Client(admin_).Get("/api/v1/experiments").status();
  EXPECT_THAT(expired.message(), HasSubstr("expired")) << expired;
}

// The web page's login: an HttpOnly, SameSite=Strict cookie that counts only with the page's
// header, never readable in the answer's body, and cleared and revoked by logout.
TEST_F(AuthRoutesTest, ACookieLoginCountsOnlyWithThePagesHeaderAndLogoutEndsIt) {
  httplib::Client raw("127.0.0.1", port_);
  wire::LoginRequest login{"admin", kAdminPassword};
  login.cookie = true;
  httplib::Result in = raw.Post("/api/v1/auth/login", login.ToJson().dump(), "application/json");
  ASSERT_TRUE(in);
  ASSERT_EQ(in->status, 200) << in->body;
  const Json body = Json::parse(in->body);
  EXPECT_FALSE(body.contains("token")) << "the page's scripts never see the token: " << in->body;
  EXPECT_EQ(body["username"], "admin");
  const std::string set = in->get_header_value("Set-Cookie");
  EXPECT_THAT(set, MatchesRegex("cohort_session=[0-9a-f]+; Max-Age=604800; Path=/api/; "
                                "HttpOnly; SameSite=Strict"));
  const std::string cookie = set.substr(0, set.find(';'));
  const std::string token = CookieValue(cookie, kSessionCookie);
  ASSERT_FALSE(token.empty());
  EXPECT_EQ(CookieValue("a=1; " + cookie + "; b=\"2\"", kSessionCookie), token);
  EXPECT_EQ(CookieValue("b=\"2\"", "b"), "2");
  EXPECT_EQ(CookieValue("xcohort_session=1", kSessionCookie), "");

  const httplib::Headers page = {{"Cookie", cookie}, {"X-Cohort-Request", "1"}};
  httplib::Result me = raw.Get("/api/v1/me", page);
  ASSERT_TRUE(me);
  EXPECT_EQ(me->status, 200) << me->body;
  // A forged request (a form or an image on another site) carries the cookie, not the header.
  httplib::Result forged = raw.Post("/api/v1/users", {{"Cookie", cookie}},
                                    wire::NewUser{"mallory", "mallory-password", true}
                                        .ToJson().dump(), "application/json");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 401);
  EXPECT_THAT(forged->body, HasSubstr("X-Cohort-Request"));
  // Another site's page cannot send the header without an Origin the guard refuses.
  httplib::Headers cross = page;
  cross.emplace("Origin", "http://evil.example");
  EXPECT_EQ(raw.Get("/api/v1/me", cross)->status, 403);
  // A Bearer token wins over the cookie: the CLI's own login stays its own.
  EXPECT_OK(Client(admin_).Get("/api/v1/me"));

  httplib::Result out = raw.Post("/api/v1/auth/logout", page, "", "application/json");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 200) << out->body;
  EXPECT_THAT(out->get_header_value("Set-Cookie"),
              MatchesRegex("cohort_session=; Max-Age=0; Path=/api/; HttpOnly; SameSite=Strict"));
  EXPECT_EQ(raw.Get("/api/v1/me", page)->status, 401) << "logout revoked the cookie's token";
  EXPECT_TRUE(absl::IsUnauthenticated(Client(token).Get("/api/v1/me").status()));
  EXPECT_OK(Client(admin_).Get("/api/v1/me")) << "and only that token";
}

TEST(SessionCookieTest, IsSecureOverHttps) {
  EXPECT_THAT(SessionCookie("ab", absl::Hours(1), true),
              MatchesRegex("cohort_session=ab; Max-Age=3600; Path=/api/; HttpOnly; "
                           "SameSite=Strict; Secure"));
  EXPECT_THAT(ExpiredSessionCookie(true), HasSubstr("; Secure"));
}

TEST_F(AuthRoutesTest, RepeatedFailedLoginsAreRefusedWith429) {
  httplib::Client raw("127.0.0.1", port_);
  const std::string wrong = wire::LoginRequest{"admin", "wrong-password"}.ToJson().dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(raw.Post("/api/v1/auth/login", wrong, "application/json")->status, 401);
  }
  httplib::Result throttled = raw.Post("/api/v1/auth/login", wrong, "application/json");
  ASSERT_TRUE(throttled);
  EXPECT_EQ(throttled->status, 429);
  EXPECT_THAT(throttled->body, HasSubstr("try again in"));
}

TEST_F(AuthRoutesTest, AgentRoutesNeedTheClusterSecret) {
  ExpectAgentRefusal(Register(""));
  ExpectAgentRefusal(Register(admin_));
  ExpectAgentRefusal(Register(secret_ + "0"));
  EXPECT_TRUE(master_->agents().List().value().agents.empty());
  ASSERT_OK(Register(secret_));
  const std::string poll = "/api/v1/agents/a1/actions?timeout=0";
  ExpectAgentRefusal(Client("").Get(poll).status());
  ExpectAgentRefusal(Client(admin_).Get(poll).status());
  ExpectAgentRefusal(Client("").Post("/api/v1/agents/a1/heartbeat").status());
  EXPECT_OK(Client(secret_).Get(poll));
  EXPECT_OK(Client(secret_).Post("/api/v1/agents/a1/heartbeat"));
  const int64_t experiment = CreateExperiment(admin_);
  const std::string context = absl::StrCat("/api/v1/experiments/", experiment, "/context");
  ExpectAgentRefusal(Client(admin_).GetBytes(context).status());
  EXPECT_EQ(Client(secret_).GetBytes(context).value(), context_);
}

TEST_F(AuthRoutesTest, AnAllocationsTokenPostsOnlyForItselfAndOnlyWhileItRuns) {
  TwoStarts started;
  ASSERT_NO_FATAL_FAILURE(StartTwoTrials(&started));
  const auto& [first, second, a, b] = started;
  ASSERT_NE(a.allocation_token, b.allocation_token);
  const std::string a_path = "/api/v1/allocations/" + a.allocation;
  const Json exit = wire::ExitReport{0, 0}.ToJson();
  const Json logs = {{"trial_id", a.trial_id}, {"lines", {{{"rank", 0}, {"line", "x"}}}}};

  for (const std::string& wrong : {std::string(), secret_, admin_, b.allocation_token}) {
    absl::Status fake = Client(wrong).Post(a_path + "/exit", exit).status();
    EXPECT_TRUE(absl::IsUnauthenticated(fake)) << fake;
    EXPECT_THAT(fake.message(), HasSubstr("for allocation " + a.allocation + " only"));
    EXPECT_TRUE(absl::IsUnauthenticated(Client(wrong).Post(a_path + "/logs", logs).status()));
  }
  EXPECT_EQ(FirstTrial(first).state, wire::TrialState::kRunning) << "no fake exit counted";
  EXPECT_TRUE(
      absl::IsUnauthenticated(Client(a.allocation_token).Get("/api/v1/experiments").status()))
      << "an allocation's token reads nothing else";
  EXPECT_TRUE(
      absl::IsUnauthenticated(Client(a.allocation_token)
                                  .GetBytes(absl::StrCat("/api/v1/experiments/", first, "/context"))
                                  .status()));

  EXPECT_OK(Client(a.allocation_token).Post(a_path + "/logs", logs));
  ASSERT_OK(Client(a.allocation_token).Post(a_path + "/exit", exit));
  EXPECT_NE(FirstTrial(first).state, wire::TrialState::kRunning);
  absl::Status after = Client(a.allocation_token).Post(a_path + "/logs", logs).status();
  EXPECT_TRUE(absl::IsNotFound(after)) << "nothing after the allocation ended: " << after;
  EXPECT_EQ(FirstTrial(second).state, wire::TrialState::kRunning);
}

TEST_F(AuthRoutesTest, AnAgentPostsItsAllocationsOutputInOneRequestEachItemWithItsToken) {
  TwoStarts started;
  ASSERT_NO_FATAL_FAILURE(StartTwoTrials(&started));
  const auto& [first, second, a, b] = started;
  wire::OutputBatch outputs;
  outputs.items.push_back({.allocation = a.allocation,
                           .token = a.allocation_token,
                           .logs = wire::LogBatch{.trial_id = a.trial_id, .lines = {{0, "x"}}},
                           .exit = wire::ExitReport{0, 0}});
  outputs.items.push_back({.allocation = b.allocation,
                           .token = a.allocation_token,  // not b's
                           .exit = wire::ExitReport{0, 0}});
  const std::string path = "/api/v1/agents/a1/outputs";
  ExpectAgentRefusal(Client(admin_).Post(path, outputs.ToJson()).status());
  ExpectAgentRefusal(Client(a.allocation_token).Post(path, outputs.ToJson()).status());
  absl::StatusOr<Json> answer = Client(secret_).Post(path, outputs.ToJson());
  ASSERT_OK(answer);
  const wire::OutputResults results = wire::ParseOutputResults(*answer).value();
  ASSERT_EQ(results.results.size(), 2u) << answer->dump();
  EXPECT_EQ(results.results[0].code, 200) << results.results[0].error;
  EXPECT_EQ(results.results[1].code, 401);
  EXPECT_THAT(results.results[1].error, HasSubstr("without its token"));
  EXPECT_NE(FirstTrial(first).state, wire::TrialState::kRunning) << "a's exit was stored";
  EXPECT_EQ(FirstTrial(second).state, wire::TrialState::kRunning) << "b's exit was refused";
  // After its exit, a's output is refused as its own post would be, naming the part.
  outputs.items.resize(1);
  const wire::OutputResults late =
      wire::ParseOutputResults(Client(secret_).Post(path, outputs.ToJson()).value()).value();
  ASSERT_EQ(late.results.size(), 1u);
  EXPECT_EQ(late.results[0].code, 404) << late.results[0].error;
}

}  // namespace
}  // namespace cohort::master::http
