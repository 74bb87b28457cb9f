#pragma once
// HttpServer: the master's HTTP engine. libmicrohttpd parses each request, the Router's table
// (router.h) answers it, libmicrohttpd writes the answer; plain HTTP, or HTTPS (GnuTLS) with
// the certificate and key that LoadTls (tls_server.h) read and checked (the files are read once,
// by the caller, so what was checked is what is served).
//
// A thread per connection, and HTTP/1.1 keep-alive: a client that keeps its connection (the
// agents, MasterClient) costs no accept, no thread start and no TCP handshake per request, and
// its requests are served on the thread that read them (docs/design/0014-fewer-connections.md:
// why this engine and this mode). A handler may block (the Router's AdmissionGate, a long
// poll): it holds only its own connection's thread.
//
// Life: Bind (the port bound and listening, so connections queue in the kernel until the routes
// are added), then Serve, then Stop or the destructor.
// Limits: at most `max_connections` connections at once (more wait in the listen queue); a
// request's head (line and headers) within 64 KiB, else 431. The body is read only once the
// Router has admitted the request from its head (Router::Table::Admit: route, browser guard,
// authentication): a refused request is answered and its connection closed with none of its
// body read. An admitted body over its route's limit (at most kMaxBodyBytes) is 413 before it
// is read when its Content-Length says so, else once that many bytes came (a chunked body is
// counted as it arrives), and the connection is closed; a connection idle for `idle_timeout`
// is closed.
// Thread-safe: Serve and Stop from any one thread; the routes run on the connections' threads.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(TlsPem tls, LoadTls(flags.tls));
//   absl::StatusOr<std::unique_ptr<HttpServer>> server =
//       HttpServer::Bind({.host = "0.0.0.0", .port = 8080, .tls = std::move(tls)});
//   if (!server.ok()) return Fail(server.status());
//   Router router(std::move(authenticator));
//   RegisterRoutes(router, master);
//   COHORT_RETURN_IF_ERROR((*server)->Serve(router.table()));

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "master/http/router.h"
#include "master/http/tls_server.h"

struct MHD_Daemon;

namespace cohort::master::http {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // "0.0.0.0": every IPv4 interface
  int port = 0;                    // 0: any free port (port() says which)
  TlsPem tls;                      // LoadTls's result; empty: plain HTTP
  // Connections open at once, a thread each while open (idle keep-alive ones too).
  int max_connections = 4096;
  absl::Duration idle_timeout = absl::Seconds(60);
};

class HttpServer {
 public:
  // The largest body any request may carry (a context upload and its form), before the route's
  // own limit.
  static const size_t kMaxBodyBytes;

  // Listens on host:port (queue kListenBacklog; never SO_REUSEPORT): a port in use is Unavailable
  // naming it and, where it can tell, the process holding it. Nothing is answered until Serve.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Bind(HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Starts answering with `table`'s routes; Internal when libmicrohttpd cannot start (its
  // reason is logged), FailedPrecondition when already serving or stopped.
  absl::Status Serve(std::shared_ptr<const Router::Table> table);
  // Stops accepting, gives the requests begun up to 3 s to be answered (end long polls first:
  // Master::BeginShutdown), then closes every connection (idle keep-alive ones at once) and
  // joins their threads. Idempotent.
  void Stop();

  int port() const { return port_; }
  bool https() const { return !options_.tls.cert_pem.empty(); }

  struct Serving;  // the callbacks' state (http_server.cc)

 private:
  HttpServer(HttpServerOptions options, int listen_fd, int port);

  // Its tls strings: libmicrohttpd keeps pointers into them while it serves.
  HttpServerOptions options_;
  int listen_fd_;  // ours until Serve hands it to libmicrohttpd; -1 after
  int port_;
  std::unique_ptr<Serving> serving_;  // what the callbacks share; outlives the daemon
  MHD_Daemon* daemon_ = nullptr;
  bool stopped_ = false;
};

}  // namespace cohort::master::http
