#include "common/net.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cohort::net {
namespace {

int MillisUntil(absl::Time deadline) {
  absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  if (left > absl::Seconds(3600)) return 3600 * 1000;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

absl::Status ErrnoStatus(absl::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(err)));
}

// Waits until fd is ready for `events` or the deadline passes.
absl::Status WaitFd(int fd, short events, absl::Time deadline, absl::string_view what) {
  while (true) {
    pollfd pfd{fd, events, 0};
    int timeout = MillisUntil(deadline);
    int rc = ::poll(&pfd, 1, timeout);
    if (rc > 0) return absl::OkStatus();
    if (rc == 0) {
      return absl::DeadlineExceededError(absl::StrCat("timed out waiting for ", what));
    }
    if (errno != EINTR) return ErrnoStatus(what, errno);
  }
}

}  // namespace

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, int default_port) {
  HostPort out;
  out.port = default_port;
  absl::string_view host = text;
  absl::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("bad address '", text, "': missing ']'"));
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        return absl::InvalidArgumentError(absl::StrCat("bad address '", text, "'"));
      }
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.rfind(':');
             colon != absl::string_view::npos && text.find(':') == colon) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (!port.empty()) {
    int parsed = 0;
    if (!absl::SimpleAtoi(port, &parsed) || parsed < 0 || parsed > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad port '", port, "' in address '", text, "': expected 0-65535"));
    }
    out.port = parsed;
  }
  if (host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("bad address '", text, "': empty host"));
  }
  out.host = std::string(host);
  return out;
}

void TuneSocket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

absl::StatusOr<int> Listen(const std::string& host, int port, int* bound_port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  std::string port_text = std::to_string(port);
  const char* node = (host.empty() || host == "0.0.0.0") ? nullptr : host.c_str();
  if (node == nullptr) hints.ai_family = AF_INET;
  int rc = ::getaddrinfo(node, port_text.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve listen address ", host, ":", port, ": ", gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError("no address to listen on");
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = ErrnoStatus("socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, backlog) != 0) {
      const int error = errno;
      const std::string where =
          absl::StrCat("cannot listen on ", host.empty() ? "*" : host, ":", port);
      if (error == EADDRINUSE) {
        last =
            absl::UnavailableError(absl::StrCat(where, ": the port is in use", PortHolder(port)));
      } else if (error == EADDRNOTAVAIL) {
        last = absl::UnavailableError(
            absl::StrCat(where, ": no interface of this machine has that address"));
      } else {
        last = ErrnoStatus(where, error);
      }
      ::close(fd);
      continue;
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    if (addr.ss_family == AF_INET) {
      *bound_port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    } else {
      *bound_port = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    }
    ::freeaddrinfo(result);
    return fd;
  }
  ::freeaddrinfo(result);
  return last;
}

namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The inodes of the sockets listening on `port` in /proc/net/tcp and tcp6.
std::set<std::string> ListeningInodes(int port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream in(ReadWhole(table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      const size_t colon = local.rfind(':');
      int local_port = 0;
      if (state != "0A" || colon == std::string::npos ||
          !absl::SimpleHexAtoi(local.substr(colon + 1), &local_port) || local_port != port) {
        continue;
      }
      inodes.insert(inode);
    }
  }
  return inodes;
}

}  // namespace

std::vector<int> PortHolderPids(int port) {
  std::vector<int> pids;
  const std::set<std::string> inodes = ListeningInodes(port);
  if (inodes.empty()) return pids;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    int pid = 0;
    // Not this process: it may hold the socket only as one its parent let it inherit.
    if (!absl::SimpleAtoi(proc.path().filename().string(), &pid) || pid == ::getpid()) continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
      if (target.rfind("socket:[", 0) == 0 && inodes.count(target.substr(8, target.size() - 9))) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

std::string PortHolder(int port) {
  if (ListeningInodes(port).empty()) return "";
  const std::vector<int> pids = PortHolderPids(port);
  if (pids.empty()) return " (held by a process this user cannot see, or only by this one)";
  std::string command = ReadWhole(absl::StrCat("/proc/", pids[0], "/cmdline"));
  for (char& c : command) {
    if (c == '\0') c = ' ';
  }
  while (!command.empty() && command.back() == ' ') command.pop_back();
  if (command.size() > 160) command = command.substr(0, 160) + "...";
  return absl::StrCat(" (held by pid ", pids[0], command.empty() ? "" : ": ", command, ")");
}

absl::StatusOr<int> Connect(const HostPort& address, absl::Time deadline, absl::string_view what) {
  const absl::Time start = absl::Now();
  std::string last_error = "no attempt made";
  absl::Duration backoff = absl::Milliseconds(10);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    std::string port_text = std::to_string(address.port);
    int rc = ::getaddrinfo(address.host.c_str(), port_text.c_str(), &hints, &result);
    if (rc != 0) {
      last_error = absl::StrCat("cannot resolve host: ", gai_strerror(rc));
    } else {
      for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          ai->ai_protocol);
        if (fd < 0) {
          last_error = std::strerror(errno);
          continue;
        }
        int crc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (crc != 0 && errno == EINPROGRESS) {
          absl::Time attempt_deadline = std::min(deadline, absl::Now() + absl::Seconds(5));
          if (WaitFd(fd, POLLOUT, attempt_deadline, "connect").ok()) {
            int err = 0;
            socklen_t len = sizeof(err);
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            crc = err == 0 ? 0 : -1;
            errno = err == 0 ? 0 : err;
          } else {
            errno = ETIMEDOUT;
            crc = -1;
          }
        }
        if (crc == 0) {
          ::freeaddrinfo(result);
          int flags = ::fcntl(fd, F_GETFL);
          ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
          TuneSocket(fd);
          return fd;
        }
        last_error = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(result);
    }
    if (absl::Now() + backoff >= deadline) break;
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "could not connect to ", what, " at ", address.ToString(), " within ",
      absl::FormatDuration(absl::Now() - start), " (last error: ", last_error,
      "); check that it is running and that the address and port are right"));
}

absl::Status SendAll(int fd, const void* data, size_t size, absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      absl::Status s = WaitFd(fd, POLLOUT, deadline, "the peer to accept data");
      if (!s.ok()) return s;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      return absl::UnavailableError("connection closed by peer");
    }
    return ErrnoStatus("send", errno);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t size, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return absl::UnavailableError("connection closed by peer");
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      absl::Status s = WaitFd(fd, POLLIN, deadline, "data from the peer");
      if (!s.ok()) return s;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return absl::UnavailableError("connection closed by peer");
    return ErrnoStatus("recv", errno);
  }
  return absl::OkStatus();
}

std::string Hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace cohort::net
