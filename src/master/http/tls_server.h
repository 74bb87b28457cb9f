#pragma once
// NewServer: the HTTP server the master's routes go on: plain HTTP, or HTTPS (cpp-httplib's
// OpenSSL server) with a certificate and key from PEM files (`cohort-master --tls-cert FILE
// --tls-key FILE`). The files are loaded and checked here, before anything listens, so a bad
// file is an error naming it rather than a server that fails every handshake.
// Thread-safe (no shared state).
//
// Example:
//   absl::StatusOr<std::unique_ptr<httplib::Server>> server =
//       NewServer({.cert_file = "master.crt", .key_file = "master.key"});
//   if (!server.ok()) return Fail(server.status());
//   RegisterRoutes(**server, master, ...);

#include <httplib.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cohort::master::http {

struct TlsFiles {
  // The server's certificate, followed by any intermediate CA certificates (PEM).
  std::string cert_file;
  // Its private key (PEM, not encrypted: the master cannot ask for a pass phrase).
  std::string key_file;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// A plain httplib::Server when `tls` names no file, else an httplib::SSLServer serving the
// certificate in tls.cert_file (TLS 1.2 or later). InvalidArgument, naming the flag and the file,
// when only one of the two files is named, a file is missing or unreadable, the certificate or
// the key does not load (OpenSSL's reason included), or the key is not the certificate's.
absl::StatusOr<std::unique_ptr<httplib::Server>> NewServer(const TlsFiles& tls);

// The listen queue BindServer asks for (the kernel caps it at net.core.somaxconn).
inline constexpr int kListenBacklog = 4096;

// Binds `server` (made by NewServer) to host:port (port 0: any free one) and widens its listen
// queue to kListenBacklog. cpp-httplib listens with a queue of 5: a burst of connections (200
// agents posting at once) overflows it, the kernel drops the SYNs, and each client waits a 1 s
// retransmission. Returns the port bound, or -1 when it cannot bind there.
int BindServer(httplib::Server& server, const std::string& host, int port);

}  // namespace cohort::master::http
