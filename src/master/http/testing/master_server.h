#pragma once
// MasterServer (tests only): a real Master (in-memory SQLite, a FakeClock nothing advances
// unless the test does) serving its REST API on 127.0.0.1 (HTTPS when given a certificate and
// key, as cohort-master --tls-cert --tls-key does), for tests that talk HTTP to a master
// without starting processes. Destroying it stops the server (within seconds) before the master.
// Not thread-safe; one per test.
//
// Example:
//   MasterServer server(dir, {.authenticator = [](Master& m) {
//                               return MakeClusterAuthenticator(m, kSecret, "agent-secret");
//                             }});
//   httplib::Client client("127.0.0.1", server.port());

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "master/http/http_server.h"
#include "master/http/router.h"
#include "master/http/tls_server.h"
#include "master/master.h"

namespace cohort::master::http {

// The bytes of the file at `path` ("" when it cannot be read).
std::string ReadFileBytes(const std::string& path);

class MasterServer {
 public:
  struct Options {
    // Who may do what, made once the master exists (default: AllowEveryone).
    std::function<std::unique_ptr<Authenticator>(Master&)> authenticator;
    int port = 0;  // 0: any free port
    // Adds routes before the master's; they answer first where they match.
    std::function<void(Router&, Master&)> intercept;
    // Certificate and key files: serve HTTPS (tls_server.h); none: plain HTTP.
    TlsFiles tls;
  };
  // `data_dir` must exist; contexts and checkpoints go there. A master, a port or TLS files
  // that cannot be had fail the calling test (port() is then -1).
  MasterServer(const std::string& data_dir, Options options);
  ~MasterServer();

  int port() const { return port_; }
  // http://127.0.0.1:PORT, or https://127.0.0.1:PORT with TLS.
  std::string url() const;
  Master& master() { return *master_; }
  FakeClock& clock() { return clock_; }

 private:
  FakeClock clock_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<HttpServer> server_;
  bool https_ = false;
  int port_ = -1;
};

}  // namespace cohort::master::http
