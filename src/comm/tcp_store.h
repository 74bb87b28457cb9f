#pragma once
// TcpStoreServer / TcpStore: the rendezvous store over TCP. The server is a single thread
// serving any number of clients (one connection each); it is hosted by the launcher on node 0,
// or by rank 0 itself when another launcher (torchrun, mpirun, srun) started the workers.
//
// Failure detection: a client that identifies itself with a rank (TcpStore::Options::rank)
// and whose connection drops without a clean Close() is taken for dead: the server sets
// `kFailureKey` to "rank K (host) disconnected without closing" so that the survivors' monitors
// (see WatchFailures) learn of it within milliseconds.
//
// Thread-safety: TcpStoreServer is thread-safe; TcpStore is thread-safe (requests on one
// connection are serialized by a mutex; use a second TcpStore for a blocking watcher).

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "comm/store.h"
#include "common/net.h"

namespace cohort::comm {

// Key the server sets when a ranked client disconnects without closing. Its value says who.
inline constexpr char kFailureKey[] = "cohort/failure";

class TcpStoreServer {
 public:
  // Starts serving on host:port (port 0: the OS picks; see port()). Host empty: all interfaces.
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(const std::string& host, int port);

  // Stops the server thread and closes every client connection.
  ~TcpStoreServer();

  int port() const { return port_; }

 private:
  class Impl;
  TcpStoreServer() = default;
  int port_ = 0;
  std::unique_ptr<Impl> impl_;
};

class TcpStore : public Store {
 public:
  struct Options {
    // Rank of the worker owning this client, or -1 for clients that are not workers (the
    // launcher, tools). Only ranked clients are reported dead on disconnect.
    int rank = -1;
    // Deadline for the connection to succeed (the server may still be starting).
    absl::Duration connect_timeout = absl::Seconds(60);
  };

  // Connects to the server at `address`. The error names the address.
  static absl::StatusOr<std::unique_ptr<TcpStore>> Connect(const net::HostPort& address,
                                                           const Options& options);

  // Closes cleanly (the server does not report this client as failed).
  ~TcpStore() override;

  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::Status Delete(absl::string_view key) override;

  const net::HostPort& address() const { return address_; }

  // Wakes a call blocked in another thread (it fails with Unavailable) and makes every later
  // call fail. Used to stop watcher threads promptly.
  void Interrupt();

 private:
  TcpStore(int fd, net::HostPort address) : fd_(fd), address_(std::move(address)) {}
  // Sends one request and reads its reply; `wait` extends the I/O deadline for server waits.
  absl::StatusOr<std::string> Call(char op, const std::string& payload, absl::Duration wait);

  int fd_;
  net::HostPort address_;
  std::mutex mu_;
};

// Watches the store for a failure notice on its own connection and calls `on_failure` with the
// notice (once). Stops when destroyed. Used by communicators to abort collectives early when
// a peer dies.
class FailureWatcher {
 public:
  static absl::StatusOr<std::unique_ptr<FailureWatcher>> Start(
      const net::HostPort& address, std::string key,
      std::function<void(const std::string& notice)> on_failure);
  ~FailureWatcher();

 private:
  FailureWatcher() = default;
  std::atomic<bool> stop_{false};
  std::unique_ptr<TcpStore> store_;
  std::thread thread_;
};

}  // namespace cohort::comm
