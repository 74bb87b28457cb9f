#include "cli/login_store.h"

#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "cli/command_context.h"
#include "common/env.h"
#include "common/json_bounded.h"
#include "common/private_file.h"
#include "common/small_file.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

// The file's JSON; an empty object when it is missing, over 1 MiB (a token per master is a
// few hundred bytes) or not a JSON object.
Json ReadLogins() {
  absl::StatusOr<std::string> text = ReadSmallFile(LoginFilePath(), 1u << 20);
  if (!text.ok()) return Json::object();
  absl::StatusOr<Json> json = ParseJsonBounded<Json>(*text);
  if (!json.ok() || !json->is_object()) return Json::object();
  return *json;
}

absl::Status WriteLogins(const Json& logins) {
  const fs::path path = LoginFilePath();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", path.parent_path().string(), ": ", ec.message()));
  }
  ::chmod(path.parent_path().c_str(), 0700);
  return WritePrivateFile(path.string(), logins.dump(2) + "\n");
}

}  // namespace

std::string LoginFilePath() {
  std::string base = env::GetOr("XDG_CONFIG_HOME", "");
  if (base.empty()) base = (fs::path(env::GetOr("HOME", ".")) / ".config").string();
  return (fs::path(base) / "cohort" / "auth.json").string();
}

std::optional<StoredLogin> LoadLogin(const std::string& url) {
  const Json logins = ReadLogins();
  const auto masters = logins.find("masters");
  if (masters == logins.end() || !masters->is_object()) return std::nullopt;
  const auto entry = masters->find(url);
  if (entry == masters->end() || !entry->is_object()) return std::nullopt;
  const Json& e = *entry;
  if (!e.contains("token") || !e["token"].is_string()) return std::nullopt;
  return StoredLogin{e.value("username", std::string()), e["token"].get<std::string>()};
}

absl::Status SaveLogin(const std::string& url, const StoredLogin& login) {
  Json logins = ReadLogins();
  if (!logins["masters"].is_object()) logins["masters"] = Json::object();
  logins["masters"][url] = {{"username", login.username}, {"token", login.token}};
  return WriteLogins(logins);
}

absl::Status ForgetLogin(const std::string& url) {
  Json logins = ReadLogins();
  if (!logins.contains("masters") || !logins["masters"].is_object() ||
      !logins["masters"].contains(url)) {
    return absl::OkStatus();
  }
  logins["masters"].erase(url);
  return WriteLogins(logins);
}

absl::StatusOr<wire::LoginResponse> LogIn(client::MasterClient& client, const std::string& username,
                                          const std::string& password) {
  absl::StatusOr<wire::LoginResponse> login = ParseAnswer(
      "POST /api/v1/auth/login",
      client.Post("/api/v1/auth/login", wire::LoginRequest{username, password}.ToJson()),
      wire::ParseLoginResponse);
  if (!login.ok()) return login.status();
  absl::Status saved = SaveLogin(client.url(), {login->username, login->token});
  if (!saved.ok()) {
    return absl::UnavailableError(
        absl::StrCat("logged in, but the token cannot be kept: ", saved.message()));
  }
  client.set_bearer_token(login->token);
  return login;
}

client::MasterClient LoggedInClient(const std::string& url, absl::Duration timeout,
                                    const std::string& tls_ca_file) {
  client::MasterClient client(url, timeout);
  client.set_tls_ca_file(tls_ca_file);
  if (std::optional<StoredLogin> stored = LoadLogin(client.url())) {
    client.set_bearer_token(stored->token);
  }
  const std::string user = env::GetOr("COHORT_USER", "");
  const std::string password = env::GetOr("COHORT_PASSWORD", "");
  if (!user.empty() && !password.empty()) {
    client.set_relogin(
        [url = client.url(), timeout, tls_ca_file, user,
         password]() -> absl::StatusOr<std::string> {
          client::MasterClient fresh(url, timeout);
          fresh.set_tls_ca_file(tls_ca_file);  // the same trust as every other request
          absl::StatusOr<wire::LoginResponse> login = LogIn(fresh, user, password);
          if (!login.ok()) {
            return absl::UnauthenticatedError(absl::StrCat("logging in as $COHORT_USER (", user,
                                                           "): ", login.status().message()));
          }
          return login->token;
        });
  }
  return client;
}

}  // namespace cohort::cli
