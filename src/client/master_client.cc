#include "client/master_client.h"

#include <httplib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/local_cluster.h"
#include "common/json_bounded.h"
#include "wire/cluster_bodies.h"

namespace cohort::client {
namespace {

void SetTimeout(httplib::Client& client, absl::Duration timeout) {
  const auto us = std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(us);
  client.set_write_timeout(us);
}

// A failed request's answer as one message: the master's "error", then each of its "errors"
// on a line of its own, indented; the raw body when it is no wire::ErrorBody.
std::string ErrorMessage(const std::string& raw, const Json& body) {
  absl::StatusOr<wire::ErrorBody> error = wire::ParseErrorBody(body);
  if (!error.ok()) return raw;
  std::string message = error->error;
  for (const std::string& e : error->errors) absl::StrAppend(&message, "\n  ", e);
  return message;
}

absl::StatusOr<Json> Interpret(const std::string& url, const std::string& what,
                               const httplib::Result& result) {
  if (!result) {
    return absl::UnavailableError(absl::StrCat(
        "cannot reach the master at ", url, " (", what, ": ", httplib::to_string(result.error()),
        "): is cohort-master running? (`cohort cluster up` starts a local one; --master or "
        "$COHORT_MASTER names another)"));
  }
  // The answer is outside input too: its nesting is bounded before nlohmann's parser recurses.
  if (absl::Status depth = CheckJsonDepth(result->body); !depth.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the answer from the master at ", url, " (",
                                                   what, ") is refused: ", depth.message()));
  }
  Json body = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (result->status >= 200 && result->status < 300) {
    if (body.is_discarded()) return Json::object();
    return body;
  }
  const std::string message = ErrorMessage(result->body, body);
  if (result->status == 401) return absl::UnauthenticatedError(message);
  if (result->status == 404) return absl::NotFoundError(message);
  if (result->status == 409) return absl::FailedPreconditionError(message);
  if (result->status >= 400 && result->status < 500) return absl::InvalidArgumentError(message);
  return absl::InternalError(
      absl::StrCat("the master failed (HTTP ", result->status, "): ", message));
}

}  // namespace

MasterClient::MasterClient(std::string url, absl::Duration timeout)
    : url_(std::move(url)), timeout_(timeout) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

MasterClient::~MasterClient() = default;

void MasterClient::Prepare(httplib::Client& client, absl::Duration timeout) const {
  SetTimeout(client, timeout);
  if (!bearer_token_.empty()) client.set_bearer_token_auth(bearer_token_);
}

absl::StatusOr<Json> MasterClient::Get(const std::string& path) { return Get(path, timeout_); }

absl::StatusOr<Json> MasterClient::Get(const std::string& path, absl::Duration timeout) {
  return WithRelogin([&] {
    httplib::Client client(url_);
    Prepare(client, timeout);
    return Interpret(url_, "GET " + path, client.Get(path));
  });
}

absl::StatusOr<Json> MasterClient::Post(const std::string& path, const Json& body) {
  return WithRelogin([&] {
    httplib::Client client(url_);
    Prepare(client, timeout_);
    return Interpret(url_, "POST " + path, client.Post(path, body.dump(), "application/json"));
  });
}

absl::StatusOr<Json> MasterClient::Put(const std::string& path, const std::string& body,
                                       const std::string& content_type) {
  return WithRelogin([&] {
    httplib::Client client(url_);
    Prepare(client, timeout_);
    return Interpret(url_, "PUT " + path, client.Put(path, body, content_type));
  });
}

absl::StatusOr<Json> MasterClient::Delete(const std::string& path) {
  return WithRelogin([&] {
    httplib::Client client(url_);
    Prepare(client, timeout_);
    return Interpret(url_, "DELETE " + path, client.Delete(path));
  });
}

absl::StatusOr<Json> MasterClient::PostForm(const std::string& path,
                                            const std::vector<FormPart>& parts) {
  httplib::MultipartFormDataItems items;
  for (const FormPart& p : parts) items.push_back({p.name, p.content, p.filename, p.content_type});
  return WithRelogin([&] {
    httplib::Client client(url_);
    Prepare(client, timeout_);
    return Interpret(url_, "POST " + path, client.Post(path, items));
  });
}

absl::StatusOr<std::string> MasterClient::GetBytes(const std::string& path) {
  httplib::Client client(url_);
  Prepare(client, timeout_);
  httplib::Result result = client.Get(path);
  if (!result || result->status != 200) {
    absl::StatusOr<Json> error = Interpret(url_, "GET " + path, result);
    if (!error.ok()) return error.status();
    return absl::InternalError(absl::StrCat("GET ", path, ": HTTP ", result->status));
  }
  return result->body;
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT)
      return absl::NotFoundError(absl::StrCat("secret file ", path, " does not exist"));
    return absl::InvalidArgumentError(
        absl::StrCat("secret file ", path, ": ", std::strerror(errno)));
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("secret file ", path, " may be read or changed by other users (mode ",
                     absl::StrFormat("%04o", info.st_mode & 07777),
                     "): make it private with `chmod 600 ", path, "`"));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("secret file ", path, " cannot be read"));
  }
  const std::string secret(absl::StripAsciiWhitespace(text));
  if (secret.empty())
    return absl::InvalidArgumentError(absl::StrCat("secret file ", path, " is empty"));
  return secret;
}

std::string MasterUrl(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("COHORT_MASTER"); env != nullptr && *env != '\0') return env;
  if (std::optional<std::string> local = LocalClusterUrl()) return *local;
  return "http://127.0.0.1:8080";
}

}  // namespace cohort::client
