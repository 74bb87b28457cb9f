#pragma once
// Helpers around Gloo's TCP transport for GlooCommunicator: choosing the device address, and
// breaking a connected context so that blocked operations return at once.
//
// Thread-safety: LocalAddressToward and CreateGlooTcpDevice are thread-safe.
// GlooPairSockets::ShutDown may run on any thread while another thread is blocked in a Gloo
// operation on the same context (that is its purpose).

#include <sys/socket.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "comm/store.h"
#include "gloo/context.h"
#include "gloo/transport/device.h"

namespace cohort::comm::internal {

// The local IP address (numeric, e.g. "10.0.0.7") of the interface this host uses to reach
// host:port. Found by connecting a UDP socket there and reading its local address
// (getsockname): the kernel picks the route and source address, and no packet is sent. When
// `host` is the rendezvous store, every machine of the job can reach that address, unlike
// the first address of the hostname, which may be loopback or a private bridge.
// Errors name host:port (unresolvable or unreachable: no route).
absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port);

// Makes writes to a broken connection fail with EPIPE instead of killing the process with
// SIGPIPE, as they would by default: Gloo writes with writev(2), which cannot ask for
// MSG_NOSIGNAL, so a peer that died (or a connection shut down by GlooPairSockets) would
// otherwise kill the writer. Sets SIGPIPE to ignored only where it still has the default
// action, leaving a handler the program installed alone. Thread-safe; idempotent.
void IgnoreSigpipe();

// A Gloo TCP device bound to `network_interface` when non-empty (e.g. "eth0"); otherwise to
// LocalAddressToward(chief_addr, rendezvous_port). Errors name the interface or address.
absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooTcpDevice(
    const std::string& network_interface, const std::string& chief_addr, int rendezvous_port);

// The TCP sockets of a Gloo context's pairs, found once the context is connected, so that
// the context can be broken from any thread. Gloo (this version) has no way to interrupt a
// blocked operation: Pair::close() stops the event loop from watching the socket, so this
// rank's waiters sleep until their timeout, and the tcp::Pair header that holds the socket is
// not installable (Debian's libgloo-dev lacks gloo/common/memory.h). Shutting the socket down
// instead (shutdown(2), both directions) makes Gloo's loop read end-of-file: operations
// blocked on the pair, here and on the peer, throw IoException at once, and so does every
// later one.
//
// A pair's socket is recognised by its endpoints: the pair's own listening address as local
// address (this rank accepted the connection) or the peer's listening address for this rank,
// read from the rendezvous entry connectFullMesh publishes under the key "<rank>", as remote
// address (this rank connected). Immutable once found; ShutDown is thread-safe.
class GlooPairSockets {
 public:
  // Finds the sockets of `context`, just connected by connectFullMesh through `store` (the
  // same store view). Errors: a peer's entry is missing or malformed. A pair whose socket is
  // not found is left out (ShutDown cannot break it; its operations still time out).
  static absl::StatusOr<GlooPairSockets> Find(gloo::Context& context, Store& store);

  // Shuts down every socket found that still has the endpoints it was found with (a socket
  // Gloo has closed meanwhile, whose number may have been reused, is left alone).
  void ShutDown() const;

  // Number of pairs whose socket was found.
  int found() const { return static_cast<int>(sockets_.size()); }

  // Each peer's listening address as Gloo writes it in its error messages
  // ("[10.0.0.5]:41234"), indexed by rank; empty for this rank.
  const std::vector<std::string>& peer_addresses() const { return peer_addresses_; }

 private:
  struct Socket {
    int fd;
    sockaddr_storage local;
    sockaddr_storage peer;
  };
  std::vector<Socket> sockets_;
  std::vector<std::string> peer_addresses_;
};

}  // namespace cohort::comm::internal
