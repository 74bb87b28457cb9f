#pragma once
// Blocking TCP socket helpers with deadlines. Every call that can wait takes an absolute
// deadline and fails with DeadlineExceeded naming the peer address when it passes.
// Thread-compatible: distinct file descriptors may be used from distinct threads.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cohort::net {

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};

// Parses "host", "host:port", "[v6addr]:port". A missing port gives `default_port`; a bad port
// is InvalidArgument naming the text.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, int default_port);

// Listens on host:port (port 0: the OS picks one). `host` empty or "0.0.0.0" binds all IPv4
// interfaces. Returns the listening fd (close-on-exec) and stores the bound port in *bound_port.
// `backlog`: the listen queue asked for (the kernel caps it at net.core.somaxconn).
// SO_REUSEADDR only (never SO_REUSEPORT): a port another socket listens on is Unavailable
// "cannot listen on HOST:PORT: the port is in use" and, where it can tell, the process holding
// it (PortHolder).
absl::StatusOr<int> Listen(const std::string& host, int port, int* bound_port, int backlog = 512);

// Who listens on TCP `port` on this machine, for an "address in use" error: " (held by pid 123:
// cohort-master --port 8080)", or " (held by another user's process)" when the socket is there
// but its process cannot be seen, or "" when nothing listens there. This process is never named
// (it may hold an inherited copy of the socket). Reads /proc.
std::string PortHolder(int port);
// The pids of the processes this user can see that hold a socket listening on TCP `port`, this
// process aside (empty when none).
std::vector<int> PortHolderPids(int port);

// Connects to host:port, retrying refused or unreachable attempts until `deadline` (the peer
// may not be listening yet). The error names the address and what was waited for
// (`what`, e.g. "rendezvous store").
absl::StatusOr<int> Connect(const HostPort& address, absl::Time deadline, absl::string_view what);

// Writes/reads exactly `size` bytes. A closed peer gives Unavailable ("connection closed by
// peer"); a passed deadline gives DeadlineExceeded.
absl::Status SendAll(int fd, const void* data, size_t size, absl::Time deadline);
absl::Status RecvAll(int fd, void* data, size_t size, absl::Time deadline);

// Sets TCP_NODELAY and close-on-exec; best effort.
void TuneSocket(int fd);

// Hostname of this machine.
std::string Hostname();

}  // namespace cohort::net
