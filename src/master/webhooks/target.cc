#include "master/webhooks/target.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cohort::master::webhooks {
namespace {

struct UrlParts {
  std::string scheme;
  std::string host;
  int port = 0;
};

std::string Part(CURLU* u, CURLUPart what) {
  char* value = nullptr;
  if (curl_url_get(u, what, &value, CURLU_DEFAULT_PORT) != CURLUE_OK || value == nullptr) {
    return "";
  }
  std::string out(value);
  curl_free(value);
  return out;
}

absl::StatusOr<UrlParts> Parse(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
  if (u == nullptr || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat("url: '", url, "' is not a URL"));
  }
  UrlParts parts{Part(u.get(), CURLUPART_SCHEME), Part(u.get(), CURLUPART_HOST)};
  if (parts.scheme != "http" && parts.scheme != "https") {
    return absl::InvalidArgumentError(
        absl::StrCat("url: only http and https are allowed, got '", parts.scheme, "'"));
  }
  if (!Part(u.get(), CURLUPART_USER).empty() || !Part(u.get(), CURLUPART_PASSWORD).empty()) {
    return absl::InvalidArgumentError(
        "url: credentials in a URL are refused (they would be kept and shown): put a token in "
        "the path instead");
  }
  if (parts.host.empty() || !absl::SimpleAtoi(Part(u.get(), CURLUPART_PORT), &parts.port)) {
    return absl::InvalidArgumentError(absl::StrCat("url: '", url, "' has no host"));
  }
  return parts;
}

bool IsLocal4(uint32_t host_order) {
  const uint32_t a = host_order;
  return (a >> 24) == 127 || (a >> 16) == 0xA9FE || a == 0 || (a >> 28) == 0xE ||
         (a >> 24) == 0;  // loopback, link-local, unspecified, multicast, "this network"
}

bool IsLocal6(const in6_addr& a) {
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    uint32_t v4 = 0;
    std::memcpy(&v4, &a.s6_addr[12], 4);
    return IsLocal4(ntohl(v4));
  }
  return IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_LINKLOCAL(&a) || IN6_IS_ADDR_UNSPECIFIED(&a) ||
         IN6_IS_ADDR_MULTICAST(&a);
}

}  // namespace

absl::Status CheckUrl(const std::string& url) { return Parse(url).status(); }

bool IsLocalAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return IsLocal4(ntohl(v4.s_addr));
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IsLocal6(v6);
  return false;
}

absl::StatusOr<Target> ResolveTarget(const std::string& url, bool allow_local) {
  absl::StatusOr<UrlParts> parts = Parse(url);
  if (!parts.ok()) return parts.status();
  const bool literal6 = absl::StartsWith(parts->host, "[");
  const std::string name = literal6 ? parts->host.substr(1, parts->host.size() - 2) : parts->host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(name.c_str(), nullptr, &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("resolving ", name, ": ", gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  std::string first;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, raw, text, sizeof(text)) == nullptr) continue;
    if (!allow_local && IsLocalAddress(text)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "refused: ", name, " is ", text,
          ", a loopback, link-local, unspecified or multicast address (an admin may allow local "
          "targets: `cohort webhook create --allow-local`)"));
    }
    if (first.empty()) first = text;
  }
  if (first.empty())
    return absl::UnavailableError(absl::StrCat("resolving ", name, ": no address"));
  Target t{url, parts->host, parts->port, ""};
  bool is_literal = literal6;
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) is_literal = true;
  if (!is_literal) {
    t.pin = absl::StrCat(parts->host, ":", parts->port, ":",
                         absl::StrContains(first, ':') ? absl::StrCat("[", first, "]") : first);
  }
  return t;
}

}  // namespace cohort::master::webhooks
