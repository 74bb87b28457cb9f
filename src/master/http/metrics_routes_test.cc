// GET /metrics on the master's real routes (an in-process Master on a loopback port behind
// ClusterAuthenticator): the answer parses as Prometheus's text format, its gauges agree with
// GET /api/v1/slots and /api/v1/tasks, the requests are counted by route pattern and status,
// and only logged-in users may read it.
#include <httplib.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/master_client.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http/agent_secret_authenticator.h"
#include "master/http/cluster_authenticator.h"
#include "master/http/testing/master_server.h"
#include "wire/agent_protocol.h"
#include "wire/cluster_bodies.h"
#include "wire/states.h"
#include "wire/user_bodies.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Labels = std::map<std::string, std::string>;

// One sample line: name{labels} value.
struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// A parsed exposition: the samples in order and each family's TYPE.
struct Exposition {
  std::map<std::string, std::string> types;
  std::vector<Sample> samples;
};

bool IsName(const std::string& name, bool colons) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && !(colons && c == ':')) {
      return false;
    }
  }
  return true;
}

// Reads {a="x",b="y"} at text[*at] (just after the metric name) into `labels`.
absl::Status ParseLabels(const std::string& text, size_t* at, Labels* labels) {
  size_t i = *at + 1;
  while (i < text.size() && text[i] != '}') {
    const size_t eq = text.find('=', i);
    if (eq == std::string::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      return absl::InvalidArgumentError("a label is not name=\"value\"");
    }
    const std::string name = text.substr(i, eq - i);
    if (!IsName(name, false)) return absl::InvalidArgumentError("bad label name " + name);
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        const char e = text[++j];
        if (e != '\\' && e != '"' && e != 'n') return absl::InvalidArgumentError("bad escape");
        value += e == 'n' ? '\n' : e;
      } else {
        value += text[j];
      }
    }
    if (j >= text.size()) return absl::InvalidArgumentError("an unterminated label value");
    if (!labels->emplace(name, value).second) return absl::InvalidArgumentError("label twice");
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  if (i >= text.size()) return absl::InvalidArgumentError("labels without '}'");
  *at = i + 1;
  return absl::OkStatus();
}

absl::StatusOr<double> ParseValue(const std::string& text) {
  if (text == "+Inf") return std::numeric_limits<double>::infinity();
  if (text == "-Inf") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) return absl::InvalidArgumentError("bad value " + text);
  return value;
}

absl::StatusOr<Sample> ParseSample(const std::string& line) {
  Sample sample;
  size_t at = 0;
  while (at < line.size() && line[at] != '{' && line[at] != ' ') ++at;
  sample.name = line.substr(0, at);
  if (!IsName(sample.name, true)) return absl::InvalidArgumentError("bad metric name");
  if (at < line.size() && line[at] == '{') {
    if (absl::Status s = ParseLabels(line, &at, &sample.labels); !s.ok()) return s;
  }
  if (at >= line.size() || line[at] != ' ') return absl::InvalidArgumentError("no value");
  // The value, then an optional timestamp (an integer).
  std::vector<std::string> rest = absl::StrSplit(line.substr(at + 1), ' ');
  if (rest.empty() || rest.size() > 2) return absl::InvalidArgumentError("bad value field");
  int64_t timestamp = 0;
  if (rest.size() == 2 && !absl::SimpleAtoi(rest[1], &timestamp)) {
    return absl::InvalidArgumentError("bad timestamp");
  }
  absl::StatusOr<double> value = ParseValue(rest[0]);
  if (!value.ok()) return value.status();
  sample.value = *value;
  return sample;
}

// The family a sample belongs to: a histogram's _bucket, _sum and _count are its family's.
std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    if (!absl::EndsWith(name, suffix)) continue;
    const std::string base = name.substr(0, name.size() - std::string(suffix).size());
    if (auto t = types.find(base); t != types.end() && t->second == "histogram") return base;
  }
  return name;
}

// Parses Prometheus's text format (version 0.0.4) strictly: every line is a comment, a HELP or
// TYPE line, or a well-formed sample, and a family's TYPE comes once, before its samples.
absl::StatusOr<Exposition> ParseExposition(const std::string& text) {
  Exposition out;
  std::set<std::string> sampled;
  for (const std::string& line :
       std::vector<std::string>(absl::StrSplit(text, '\n', absl::SkipEmpty()))) {
    const std::string where = absl::StrCat(" in line '", line, "'");
    if (absl::StartsWith(line, "# TYPE ")) {
      std::vector<std::string> f = absl::StrSplit(line.substr(7), ' ');
      static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                   "untyped"};
      if (f.size() != 2 || !IsName(f[0], true) || !kTypes.count(f[1])) {
        return absl::InvalidArgumentError("bad TYPE" + where);
      }
      if (sampled.count(f[0]) || !out.types.emplace(f[0], f[1]).second) {
        return absl::InvalidArgumentError("TYPE after samples, or twice" + where);
      }
      continue;
    }
    if (absl::StartsWith(line, "#")) continue;  // HELP and comments
    absl::StatusOr<Sample> sample = ParseSample(line);
    if (!sample.ok())
      return absl::InvalidArgumentError(absl::StrCat(sample.status().message(), where));
    const std::string family = FamilyOf(sample->name, out.types);
    if (!out.types.count(family)) return absl::InvalidArgumentError("no TYPE before" + where);
    sampled.insert(family);
    out.samples.push_back(*std::move(sample));
  }
  return out;
}

// Checks every histogram: per label set, buckets ascend by `le`, counts are cumulative, the last
// bucket is +Inf, and _count equals it.
void ExpectHistogramsWellFormed(const Exposition& e) {
  for (const auto& [family, type] : e.types) {
    if (type != "histogram") continue;
    std::map<Labels, std::vector<std::pair<double, double>>> buckets;  // labels -> (le, count)
    std::map<Labels, double> counts;
    for (const Sample& s : e.samples) {
      Labels labels = s.labels;
      if (s.name == family + "_bucket") {
        ASSERT_TRUE(labels.count("le")) << family;
        const double le = ParseValue(labels["le"]).value();
        labels.erase("le");
        buckets[labels].emplace_back(le, s.value);
      } else if (s.name == family + "_count") {
        counts[labels] = s.value;
      }
    }
    EXPECT_FALSE(buckets.empty()) << family;
    EXPECT_EQ(buckets.size(), counts.size()) << family;
    for (const auto& [labels, series] : buckets) {
      for (size_t i = 1; i < series.size(); ++i) {
        EXPECT_LT(series[i - 1].first, series[i].first) << family << " le ascends";
        EXPECT_LE(series[i - 1].second, series[i].second) << family << " is cumulative";
      }
      EXPECT_TRUE(std::isinf(series.back().first)) << family << " ends with +Inf";
      EXPECT_EQ(counts[labels], series.back().second) << family << " _count is the +Inf bucket";
    }
  }
}

// The value of the sample `name` with exactly `labels`; NaN when there is none.
double Value(const Exposition& e, const std::string& name, const Labels& labels = {}) {
  for (const Sample& s : e.samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

TEST(ExpositionParserTest, RefusesWhatPrometheusWouldRefuse) {
  EXPECT_OK(ParseExposition("# TYPE a gauge\na{x=\"1\"} 2\n"));
  EXPECT_THAT(ParseExposition("a 1\n"), Not(IsOk())) << "no TYPE";
  EXPECT_FALSE(ParseExposition("# TYPE a gauge\na{x=\"1} 2\n").ok());
  EXPECT_FALSE(ParseExposition("# TYPE a gauge\na 1\n# TYPE a gauge\n").ok());
  EXPECT_FALSE(ParseExposition("# TYPE a gauge\na one\n").ok());
  EXPECT_FALSE(ParseExposition("# TYPE 1a gauge\n1a 1\n").ok());
}

std::string Config(int slots) {
  return absl::StrCat(
      "name: t\nentrypoint: /bin/sh\nhyperparameters: {global_batch_size: 8}\n"
      "resources: {slots_per_trial: ",
      slots,
      "}\nmax_restarts: 0\n"
      "searcher: {name: single, metric: loss, max_length: {batches: 10}}\n");
}

constexpr char kAdminPassword[] = "admin-password";

class MetricsRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string secret_file = dir_ + "/agent-secret";
    secret_ = LoadOrCreateAgentSecret(secret_file).value();
    server_ = std::make_unique<MasterServer>(
        dir_, MasterServer::Options{.authenticator = [this, secret_file](Master& m) {
          return MakeClusterAuthenticator(m, secret_, secret_file, dir_ + "/admin-password");
        }});
    ASSERT_GT(server_->port(), 0);
    ASSERT_TRUE(server_->master().users().EnsureAdmin(kAdminPassword).value());
    absl::StatusOr<Json> login =
        Client("").Post("/api/v1/auth/login", wire::LoginRequest{"admin", kAdminPassword}.ToJson());
    ASSERT_OK(login);
    admin_ = wire::ParseLoginResponse(*login).value().token;
    const std::string made = dir_ + "/ctx.tar.gz";
    ASSERT_EQ(std::system(absl::StrCat("mkdir -p ", dir_, "/ctx && echo x > ", dir_,
                                       "/ctx/train.py && tar czf ", made, " -C ", dir_, "/ctx .")
                              .c_str()),
              0);
    context_ = ReadFileBytes(made);
  }

  client::MasterClient Client(const std::string& credential) {
    client::MasterClient client(server_->url(), absl::Seconds(10));
    client.set_bearer_token(credential);
    return client;
  }
  void Register(const std::string& id, int slots) {
    wire::AgentRegistration registration{id, slots, "127.0.0.1", 29500, 29599, {}};
    ASSERT_OK(Client(secret_).Post("/api/v1/agents", registration.ToJson()));
  }
  void CreateExperiment(int slots) {
    absl::StatusOr<Json> r = Client(admin_).PostForm(
        "/api/v1/experiments", {{"config", Config(slots), "", ""},
                                {"context", context_, "context.tar.gz", "application/gzip"}});
    ASSERT_OK(r);
  }
  // GET /metrics presenting `credential`.
  httplib::Result Scrape(const std::string& credential) {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_bearer_token_auth(credential);
    return client.Get("/metrics");
  }
  // The first start action queued for agent `id`.
  wire::StartAction TakeStart(const std::string& id) {
    absl::StatusOr<Json> polled =
        Client(secret_).Get(absl::StrCat("/api/v1/agents/", id, "/actions?timeout=5"));
    EXPECT_OK(polled);
    if (!polled.ok()) return {};
    auto batch = wire::ParseActionBatch(*polled);
    EXPECT_TRUE(batch.ok() && !batch->empty()) << polled->dump();
    if (!batch.ok() || batch->empty() || !(*batch)[0].ok()) return {};
    return std::get<wire::StartAction>(*(*batch)[0]);
  }

  const TempDir temp_{"metrics_route"};  // outlives server_
  const std::string dir_ = temp_.path();
  std::string secret_, admin_, context_;
  std::unique_ptr<MasterServer> server_;
};

TEST_F(MetricsRouteTest, GaugesAgreeWithSlotAndTaskListsAndRequestsAreCountedByRoute) {
  Register("a1", 2);
  Register("a2", 4);
  CreateExperiment(4);
  CreateExperiment(2);
  CreateExperiment(2);  // no room left: queued
  server_->clock().Advance(absl::Seconds(10));
  // What a running trial's agent sends: 3 log lines, 2 training reports.
  const wire::StartAction start = TakeStart("a1");
  const std::string path = "/api/v1/allocations/" + start.allocation;
  wire::LogBatch logs{start.trial_id, {{0, "a"}, {0, "b"}, {1, "c"}}};
  ASSERT_OK(Client(start.allocation_token).Post(path + "/logs", logs.ToJson()));
  wire::ReportBatch reports{start.trial_id, {}, std::nullopt};
  for (int step : {1, 2}) {
    reports.lines.push_back({.kind = wire::ReportKind::kTraining,
                             .time = 1.0 * step,
                             .steps_completed = step,
                             .metrics = {{"loss", 0.5}}});
  }
  ASSERT_OK(Client(start.allocation_token).Post(path + "/reports", reports.ToJson()));
  // A 401, a 404 no route matched, and a 404 of a route.
  EXPECT_TRUE(absl::IsUnauthenticated(Client("").Get("/api/v1/tasks").status()));
  EXPECT_TRUE(absl::IsNotFound(Client(admin_).Get("/api/v1/no-such-thing").status()));
  EXPECT_TRUE(absl::IsNotFound(Client(admin_).Get("/api/v1/trials/999").status()));
  const wire::SlotList slots =
      wire::ParseSlotList(Client(admin_).Get("/api/v1/slots").value()).value();
  const wire::TaskList tasks =
      wire::ParseTaskList(Client(admin_).Get("/api/v1/tasks").value()).value();

  httplib::Result scraped = Scrape(admin_);
  ASSERT_TRUE(scraped);
  ASSERT_EQ(scraped->status, 200) << scraped->body;
  EXPECT_THAT(scraped->get_header_value("Content-Type"), StartsWith("text/plain; version=0.0.4"));
  absl::StatusOr<Exposition> e = ParseExposition(scraped->body);
  ASSERT_OK(e) << "\n" << scraped->body;
  ExpectHistogramsWellFormed(*e);

  std::map<std::string, int> agent_slots, agent_used;
  for (const wire::SlotEntry& slot : slots.slots) {
    ++agent_slots[slot.agent];
    if (slot.allocation.has_value()) ++agent_used[slot.agent];
  }
  EXPECT_EQ(Value(*e, "cohort_agents_connected"), agent_slots.size());
  for (const auto& [agent, count] : agent_slots) {
    EXPECT_EQ(Value(*e, "cohort_agent_slots", {{"agent", agent}}), count) << agent;
    EXPECT_EQ(Value(*e, "cohort_agent_slots_used", {{"agent", agent}}), agent_used[agent]) << agent;
  }
  EXPECT_EQ(agent_used["a1"] + agent_used["a2"], 6) << "both agents are full";
  std::map<wire::TrialState, int> by_state;
  for (const wire::TaskEntry& task : tasks.tasks) ++by_state[task.state];
  for (wire::TrialState state : wire::AllTrialStates()) {
    if (wire::IsTerminal(state)) continue;
    EXPECT_EQ(Value(*e, "cohort_trials", {{"state", wire::Name(state)}}), by_state[state])
        << wire::Name(state);
  }
  EXPECT_EQ(Value(*e, "cohort_queue_length"), by_state[wire::TrialState::kQueued]);
  EXPECT_EQ(Value(*e, "cohort_queue_length"), 1);
  EXPECT_EQ(Value(*e, "cohort_queue_longest_wait_seconds"), 10);
  EXPECT_GT(Value(*e, "cohort_database_size_bytes"), 0);
  // A database this small never has 1,000 pages of log to copy back.
  EXPECT_EQ(Value(*e, "cohort_database_wal_checkpoints_total", {{"by", "checkpointer"}}), 0);
  EXPECT_EQ(Value(*e, "cohort_database_wal_checkpoints_total", {{"by", "writer"}}), 0);
  EXPECT_EQ(Value(*e, "cohort_log_lines_stored_total"), 3);
  EXPECT_EQ(Value(*e, "cohort_log_lines_dropped_total"), 0) << "3 lines are within the limits";
  EXPECT_EQ(Value(*e, "cohort_metric_reports_stored_total"), 2);
  // Every registration and creation ran a scheduling pass, each timed.
  EXPECT_GE(Value(*e, "cohort_scheduling_passes_total"), 4);
  EXPECT_GT(Value(*e, "cohort_scheduling_seconds_total"), 0);
  EXPECT_GT(Value(*e, "cohort_scheduling_pass_seconds", {{"quantile", "1"}}), 0);
  EXPECT_LE(Value(*e, "cohort_scheduling_pass_seconds", {{"quantile", "0.5"}}),
            Value(*e, "cohort_scheduling_pass_seconds", {{"quantile", "1"}}));
  EXPECT_GT(Value(*e, "cohort_scheduling_pass_lock_seconds", {{"quantile", "1"}}), 0);

  auto requests = [&](const char* method, const std::string& route, int code) {
    return Value(*e, "cohort_http_requests_total",
                 {{"method", method}, {"route", route}, {"code", std::to_string(code)}});
  };
  EXPECT_EQ(requests("GET", "/api/v1/tasks", 401), 1);
  EXPECT_EQ(requests("GET", "/api/v1/tasks", 200), 1);
  EXPECT_EQ(requests("GET", "/api/v1/slots", 200), 1);
  EXPECT_EQ(requests("GET", R"(/api/v1/trials/(\d+))", 404), 1) << "by pattern, not path";
  EXPECT_EQ(requests("GET", "unmatched", 404), 1);
  EXPECT_EQ(requests("POST", "/api/v1/experiments", 201), 3);
  EXPECT_EQ(Value(*e, "cohort_http_request_duration_seconds_count",
                  {{"method", "GET"}, {"route", "/api/v1/tasks"}}),
            2);
  EXPECT_THAT(scraped->body, Not(HasSubstr("/api/v1/trials/999")));
  for (const std::string& secret : {admin_, secret_, start.allocation_token}) {
    EXPECT_THAT(scraped->body, Not(HasSubstr(secret))) << "no credential in a label";
  }
}

TEST_F(MetricsRouteTest, IsForLoggedInUsersOnly) {
  for (const std::string& credential : {std::string(), secret_, std::string(64, 'f')}) {
    httplib::Result refused = Scrape(credential);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << "credential '" << credential << "'";
    EXPECT_THAT(refused->body, HasSubstr("\"error\""));
    EXPECT_THAT(refused->body, Not(HasSubstr("cohort_")));
  }
  absl::StatusOr<Json> made =
      Client(admin_).Post("/api/v1/users", wire::NewUser{"alice", "alice-password"}.ToJson());
  ASSERT_OK(made);
  absl::StatusOr<Json> login =
      Client("").Post("/api/v1/auth/login", wire::LoginRequest{"alice", "alice-password"}.ToJson());
  ASSERT_OK(login);
  httplib::Result scraped = Scrape(wire::ParseLoginResponse(*login).value().token);
  ASSERT_TRUE(scraped);
  EXPECT_EQ(scraped->status, 200) << "any user, not only admins";
  EXPECT_THAT(scraped->body, Not(HasSubstr("alice"))) << "no user names in labels";
}

}  // namespace
}  // namespace cohort::master::http
