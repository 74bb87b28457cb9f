#include "comm/internal/gloo_transport.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "gloo/transport/tcp/address.h"
#include "gloo/transport/tcp/device.h"

namespace cohort::comm::internal {
namespace {

// Local and remote address of a connected socket; false for anything else.
bool Endpoints(int fd, sockaddr_storage* local, sockaddr_storage* peer) {
  socklen_t local_len = sizeof(*local), peer_len = sizeof(*peer);
  *local = {};
  *peer = {};
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(local), &local_len) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(peer), &peer_len) == 0 &&
         (local->ss_family == AF_INET || local->ss_family == AF_INET6);
}

bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> LocalAddressToward(const std::string& host, int port) {
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve the rendezvous host ", where,
                                               " to pick a network address: ", ::gai_strerror(rc)));
  }
  std::string last_error = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    ::close(fd);
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr);
    if (::inet_ntop(local.ss_family, raw, text, sizeof(text)) == nullptr) {
      last_error = std::strerror(errno);
      continue;
    }
    ::freeaddrinfo(found);
    return std::string(text);
  }
  ::freeaddrinfo(found);
  return absl::UnavailableError(absl::StrCat("no local address can reach the rendezvous host ",
                                             where, ": ", last_error,
                                             " (set COHORT_NETWORK_INTERFACE)"));
}

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) != 0) return;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      ::sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooTcpDevice(
    const std::string& network_interface, const std::string& chief_addr, int rendezvous_port) {
  gloo::transport::tcp::attr attr;
  std::string what;
  if (!network_interface.empty()) {
    attr.iface = network_interface;
    what = absl::StrCat("network interface '", network_interface, "'");
  } else {
    auto address = LocalAddressToward(chief_addr, rendezvous_port);
    if (!address.ok()) return address.status();
    attr.hostname = *address;
    what = absl::StrCat("address ", *address, " (the one that reaches ", chief_addr, ")");
  }
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open a Gloo TCP device on ", what, ": ", e.what()));
  }
}

absl::StatusOr<GlooPairSockets> GlooPairSockets::Find(gloo::Context& context, Store& store) {
  GlooPairSockets result;
  result.peer_addresses_.resize(context.size);
  // What to look for: for each peer, this rank's listening address for it and its listening
  // address for this rank.
  std::vector<sockaddr_storage> own(context.size), theirs(context.size);
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    const auto* mine =
        dynamic_cast<const gloo::transport::tcp::Address*>(&context.getPair(peer)->address());
    if (mine == nullptr) return absl::InternalError("not a Gloo TCP context");
    own[peer] = mine->getSockaddr();
    COHORT_ASSIGN_OR_RETURN(std::string entry,
                            store.Get(std::to_string(peer), absl::Milliseconds(100)));
    const size_t width = entry.size() / (context.size - 1);
    const size_t index = context.rank < peer ? context.rank : context.rank - 1;
    if (width == 0 || entry.size() % (context.size - 1) != 0) {
      return absl::InternalError(absl::StrCat("malformed Gloo address entry of rank ", peer, " (",
                                              entry.size(), " bytes)"));
    }
    gloo::transport::tcp::Address address(
        std::vector<char>(entry.begin() + index * width, entry.begin() + (index + 1) * width));
    theirs[peer] = address.getSockaddr();
    result.peer_addresses_[peer] = address.str();
  }
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    return absl::InternalError(absl::StrCat("cannot list /proc/self/fd: ", std::strerror(errno)));
  }
  while (dirent* e = ::readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(e->d_name, &fd) || fd == ::dirfd(dir)) continue;
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    Socket socket{fd, {}, {}};
    if (!Endpoints(fd, &socket.local, &socket.peer)) continue;
    for (int peer = 0; peer < context.size; ++peer) {
      if (peer == context.rank) continue;
      if (SameEndpoint(socket.local, own[peer]) || SameEndpoint(socket.peer, theirs[peer])) {
        result.sockets_.push_back(socket);
        break;
      }
    }
  }
  ::closedir(dir);
  return result;
}

void GlooPairSockets::ShutDown() const {
  for (const Socket& socket : sockets_) {
    sockaddr_storage local, peer;
    if (Endpoints(socket.fd, &local, &peer) && SameEndpoint(local, socket.local) &&
        SameEndpoint(peer, socket.peer)) {
      ::shutdown(socket.fd, SHUT_RDWR);
    }
  }
}

}  // namespace cohort::comm::internal
