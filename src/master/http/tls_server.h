#pragma once
// LoadTls: the certificate and key the master serves HTTPS with (`cohort-master --tls-cert
// FILE --tls-key FILE`), loaded and checked with OpenSSL before anything listens, so a bad file
// is an error naming it rather than a server that fails every handshake. HttpServer
// (http_server.h) serves them.
// Thread-safe (no shared state).
//
// Example:
//   absl::StatusOr<TlsPem> pem = LoadTls({.cert_file = "master.crt", .key_file = "master.key"});
//   if (!pem.ok()) return Fail(pem.status());

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

// The PEM text of the two files, both empty for plain HTTP.
struct TlsPem {
  std::string cert_pem;  // the certificate, then any intermediate CAs
  std::string key_pem;
};

// Empty PEMs when `tls` names no file, else the two files' text once OpenSSL has loaded them
// as a certificate chain and its key. InvalidArgument, naming the flag and the file, when only
// one of the two files is named, a file is missing or unreadable, the certificate or the key
// does not load (OpenSSL's reason included), or the key is not the certificate's.
absl::StatusOr<TlsPem> LoadTls(const TlsFiles& tls);

// The listen queue the master asks for (the kernel caps it at net.core.somaxconn): a burst of
// connections (200 agents posting at once) must not overflow it, or the kernel drops the SYNs
// and each client waits a 1 s retransmission.
inline constexpr int kListenBacklog = 4096;

}  // namespace cohort::master::http
