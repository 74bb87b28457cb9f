#include "master/http/browser_guard.h"

#include <arpa/inet.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace cohort::master::http {
namespace {

// "name:port" or "[v6]:port" -> name (lower case, brackets kept for v6).
std::string HostName(absl::string_view host_header) {
  std::string host = absl::AsciiStrToLower(host_header);
  if (absl::StartsWith(host, "[")) {
    const size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(0, close + 1);
  }
  const size_t colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

std::string Shown(absl::string_view value) {
  return std::string(value.substr(0, 100));
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  const std::string name = absl::AsciiStrToLower(host);
  if (name == "localhost" || name == "::1" || name == "[::1]") return true;
  // An IPv4 literal in 127.0.0.0/8; a name such as "127.evil.example" is not one.
  in_addr address{};
  return ::inet_pton(AF_INET, name.c_str(), &address) == 1 &&
         (ntohl(address.s_addr) >> 24) == 127;
}

absl::Status BrowserGuard::Check(const httplib::Request& request) const {
  const std::string host = request.get_header_value("Host");
  if (loopback_only_ && !host.empty() && !IsLoopbackHost(HostName(host))) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Host '", Shown(host),
        "' is not a name of this master: it listens on loopback only, so it answers only "
        "requests sent to 127.0.0.1, localhost or [::1] (a web page that rebinds its name to "
        "this machine cannot reach it)"));
  }
  if (!request.has_header("Origin")) return absl::OkStatus();
  const std::string origin = absl::AsciiStrToLower(request.get_header_value("Origin"));
  const std::string own = absl::StrCat(https_ ? "https://" : "http://", absl::AsciiStrToLower(host));
  if (host.empty() || origin != own) {
    return absl::PermissionDeniedError(absl::StrCat(
        "Origin '", Shown(request.get_header_value("Origin")), "' is not this master (",
        Shown(own), "): requests from other web pages are refused"));
  }
  return absl::OkStatus();
}

}  // namespace cohort::master::http
