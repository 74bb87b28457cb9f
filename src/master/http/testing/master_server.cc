#include "master/http/testing/master_server.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/http/routes.h"

namespace cohort::master::http {

std::string MakeTempDir(const char* name) {
  std::string dir = ::testing::TempDir() + "/" + name + "_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr) << "cannot make " << dir;
  return dir;
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

MasterServer::MasterServer(const std::string& data_dir, Options options) {
  absl::StatusOr<std::unique_ptr<Master>> master = Master::Create(
      OpenSqliteDatabase(":memory:").value(),
      {.data_dir = data_dir, .clock = &clock_, .scheduling = SchedulingMode::kInline});
  EXPECT_TRUE(master.ok()) << master.status();
  if (!master.ok()) return;
  master_ = *std::move(master);
  absl::StatusOr<std::unique_ptr<httplib::Server>> server = NewServer(options.tls);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return;
  server_ = *std::move(server);
  https_ = options.tls.enabled();
  server_->new_task_queue = [] { return new httplib::ThreadPool(16); };
  if (options.intercept) options.intercept(*server_, *master_);
  std::unique_ptr<Authenticator> authenticator =
      options.authenticator ? options.authenticator(*master_) : std::make_unique<AllowEveryone>();
  RegisterRoutes(*server_, *master_, std::move(authenticator));
  port_ = BindServer(*server_, "127.0.0.1", options.port);
  EXPECT_GT(port_, 0) << "cannot listen on 127.0.0.1:" << options.port;
  if (port_ <= 0) return;
  // The socket listens once bound: clients may connect before the accept loop starts.
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

MasterServer::~MasterServer() {
  if (thread_.joinable()) {
    // stop() does nothing until the accept loop runs, which it does within moments of start.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!server_->is_running() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_TRUE(server_->is_running()) << "the test master's accept loop never started";
    server_->stop();
    thread_.join();
  }
  master_.reset();  // after the server: its handlers call the master
}

std::string MasterServer::url() const {
  return absl::StrCat(https_ ? "https" : "http", "://127.0.0.1:", port_);
}

}  // namespace cohort::master::http
