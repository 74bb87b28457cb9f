#pragma once
// BrowserGuard: the Router's defence against web pages. The CLI, the agent and the web
// interface to come send requests a browser page on another site must not be able to forge:
//   * DNS rebinding: a page on evil.example resolves its name to 127.0.0.1 and talks to a master
//     listening there. A master that serves loopback only accepts only loopback names in `Host`
//     (127.0.0.1, localhost, [::1], any port); a master bound elsewhere accepts any name.
//   * Cross-origin requests: a browser sends `Origin` with every cross-origin request (and
//     with every POST); a request whose Origin is not the master's own origin (the scheme it
//     serves, http or https, and the `Host` it was sent to) is refused. Programs (the CLI,
//     agents, curl) send no Origin.
// Refusals are PermissionDenied (403) naming the header and the value.
// Thread-safe (immutable after construction).

#include <httplib.h>

#include "absl/status/status.h"

namespace cohort::master::http {

class BrowserGuard {
 public:
  // `loopback_only`: the master listens on a loopback address only (its default); `https`: it
  // serves HTTPS (an Origin must then be https://HOST, else http://HOST).
  explicit BrowserGuard(bool loopback_only, bool https = false)
      : loopback_only_(loopback_only), https_(https) {}

  absl::Status Check(const httplib::Request& request) const;
  bool https() const { return https_; }

 private:
  bool loopback_only_;
  bool https_;
};

// Whether `host` (an address or name the master was told to listen on) is loopback.
bool IsLoopbackHost(const std::string& host);

}  // namespace cohort::master::http
