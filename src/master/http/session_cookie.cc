#include "master/http/session_cookie.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace cohort::master::http {
namespace {

std::string Attributes(bool https) {
  return absl::StrCat("; Path=/api/; HttpOnly; SameSite=Strict", https ? "; Secure" : "");
}

}  // namespace

std::string CookieValue(const std::string& cookie_header, const std::string& name) {
  for (absl::string_view part : absl::StrSplit(cookie_header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    const size_t equals = part.find('=');
    if (equals == absl::string_view::npos || part.substr(0, equals) != name) continue;
    absl::string_view value = part.substr(equals + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
  return "";
}

std::string BearerCredential(const httplib::Request& request) {
  constexpr absl::string_view kBearer = "Bearer ";
  const std::string header = request.get_header_value("Authorization");
  if (!absl::StartsWith(header, kBearer)) return "";
  return header.substr(kBearer.size());
}

Credential UserCredential(const httplib::Request& request) {
  if (std::string bearer = BearerCredential(request); !bearer.empty()) {
    return {CredentialSource::kBearer, std::move(bearer)};
  }
  // A request may carry several Cookie headers (HTTP/2 splits them): the first with ours.
  const size_t count = request.get_header_value_count("Cookie");
  for (size_t i = 0; i < count; ++i) {
    std::string token = CookieValue(request.get_header_value("Cookie", i), kSessionCookie);
    if (token.empty()) continue;
    if (!request.has_header(kPageRequestHeader)) return {CredentialSource::kCookieWithoutHeader, ""};
    return {CredentialSource::kCookie, std::move(token)};
  }
  return {};
}

std::string SessionCookie(const std::string& token, absl::Duration lifetime, bool https) {
  const int64_t max_age_s = std::max<int64_t>(0, absl::ToInt64Seconds(lifetime));
  return absl::StrCat(kSessionCookie, "=", token, "; Max-Age=", max_age_s, Attributes(https));
}

std::string ExpiredSessionCookie(bool https) {
  return absl::StrCat(kSessionCookie, "=; Max-Age=0", Attributes(https));
}

}  // namespace cohort::master::http
