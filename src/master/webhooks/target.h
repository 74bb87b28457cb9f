#pragma once
// Where a delivery may go (docs/design/0023): a webhook's URL is a user's input that the master
// fetches, so it is a server-side request forgery unless checked. Only http and https; the host
// is resolved at each attempt and refused when any address it resolves to is loopback,
// link-local (the cloud metadata address 169.254.169.254 among them), unspecified, multicast or
// an IPv4-mapped form of those, unless the webhook allows local targets (an admin's choice at
// creation). The attempt then connects to the address checked, never resolving again (no DNS
// rebinding between the check and the connection).
// Thread-safe (pure but for getaddrinfo, whose own timeouts bound a resolution).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cohort::master::webhooks {

struct Target {
  std::string url;
  std::string host;  // as in the URL
  int port = 0;
  std::string pin;  // for CURLOPT_RESOLVE: "host:port:address"; empty for a literal address
};

// InvalidArgument for a URL that does not parse, is not http(s), or has credentials in it.
absl::Status CheckUrl(const std::string& url);

// The URL checked and resolved; PermissionDenied naming the address and the rule for a refused
// target; Unavailable when the host does not resolve.
absl::StatusOr<Target> ResolveTarget(const std::string& url, bool allow_local);

// Whether `address` (an IPv4 or IPv6 literal) is loopback, link-local, unspecified or
// multicast: what ResolveTarget refuses unless allowed. False for what does not parse.
bool IsLocalAddress(const std::string& address);

}  // namespace cohort::master::webhooks
