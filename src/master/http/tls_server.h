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

}  // namespace cohort::master::http
