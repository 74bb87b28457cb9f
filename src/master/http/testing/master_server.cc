#include "master/http/testing/master_server.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "master/db/database.h"
#include "master/http/routes.h"

namespace cohort::master::http {

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
  EXPECT_OK(master);
  if (!master.ok()) return;
  master_ = *std::move(master);
  absl::StatusOr<TlsPem> tls = LoadTls(options.tls);
  EXPECT_OK(tls);
  if (!tls.ok()) return;
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Bind({.host = "127.0.0.1", .port = options.port, .tls = *std::move(tls)});
  EXPECT_OK(server);
  if (!server.ok()) return;
  server_ = *std::move(server);
  https_ = server_->https();
  std::unique_ptr<Authenticator> authenticator =
      options.authenticator ? options.authenticator(*master_) : std::make_unique<AllowEveryone>();
  Router router(std::move(authenticator));
  if (options.intercept) options.intercept(router, *master_);
  RegisterRoutes(router, *master_);
  const absl::Status serving = server_->Serve(router.table());
  EXPECT_OK(serving);
  if (serving.ok()) port_ = server_->port();
}

MasterServer::~MasterServer() {
  if (server_ != nullptr) {
    master_->BeginShutdown();  // ends long polls, which the server's stop waits for
    server_->Stop();
  }
  master_.reset();  // after the server: its handlers call the master
}

std::string MasterServer::url() const {
  return absl::StrCat(https_ ? "https" : "http", "://127.0.0.1:", port_);
}

}  // namespace cohort::master::http
