#include "comm/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/logging.h"

namespace cohort::comm {
namespace {

// Wire format: every message is [u32 length][payload]; a request payload starts with one op
// byte. Strings inside payloads are [u32 length][bytes]. Replies start with a status byte.
enum Op : char {
  kHello = 'H',   // i32 rank
  kSet = 'S',     // key, value
  kGet = 'G',     // i64 timeout_ms, key
  kAdd = 'A',     // key, i64 delta
  kWait = 'W',    // i64 timeout_ms, u32 n, keys
  kDelete = 'D',  // key
  kBye = 'B',
};
enum Reply : char { kOk = 'O', kTimeout = 'T', kError = 'E' };

constexpr size_t kMaxMessage = 256u << 20;

void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutI64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void PutStr(std::string& out, absl::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out.append(s.data(), s.size());
}

// Reads fields from a payload; any overrun marks the reader bad.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  uint32_t U32() { return Fixed<uint32_t>(); }
  int64_t I64() { return Fixed<int64_t>(); }
  int32_t I32() { return Fixed<int32_t>(); }
  std::string Str() {
    uint32_t n = U32();
    if (!ok_ || data_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string s(data_.substr(0, n));
    data_.remove_prefix(n);
    return s;
  }

 private:
  template <typename T>
  T Fixed() {
    T v{};
    if (data_.size() < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, data_.data(), sizeof(T));
    data_.remove_prefix(sizeof(T));
    return v;
  }
  absl::string_view data_;
  bool ok_ = true;
};

std::string Frame(absl::string_view payload) {
  std::string out;
  PutU32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload.data(), payload.size());
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server

class TcpStoreServer::Impl {
 public:
  Impl(int listen_fd) : listen_fd_(listen_fd) {
    if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { Loop(); });
  }
  ~Impl() {
    stop_ = true;
    char c = 0;
    // Should the write fail, Loop still sees stop_ after its poll timeout (at most 1 s).
    if (wake_[1] >= 0) (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, client] : clients_) ::close(fd);
    ::close(listen_fd_);
    if (wake_[0] >= 0) ::close(wake_[0]);
    if (wake_[1] >= 0) ::close(wake_[1]);
  }

 private:
  struct Client {
    std::string in;       // bytes received, not yet a whole message
    std::string out;      // bytes to send
    int rank = -1;
    bool said_bye = false;
    std::string peer;
  };
  struct Waiter {
    int fd;
    std::vector<std::string> keys;
    bool is_get;  // reply with the value of keys[0]
    absl::Time deadline;
  };

  void Loop() {
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({listen_fd_, POLLIN, 0});
      fds.push_back({wake_[0], POLLIN, 0});
      for (auto& [fd, client] : clients_) {
        short events = POLLIN;
        if (!client.out.empty()) events |= POLLOUT;
        fds.push_back({fd, events, 0});
      }
      int timeout_ms = 1000;
      absl::Time now = absl::Now();
      for (const auto& w : waiters_) {
        int64_t ms = absl::ToInt64Milliseconds(w.deadline - now) + 1;
        timeout_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(timeout_ms, ms)));
      }
      int rc = ::poll(fds.data(), fds.size(), timeout_ms);
      if (rc < 0 && errno != EINTR) break;
      if (fds[0].revents & POLLIN) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        int fd = fds[i].fd;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          if (!ReadFrom(fd)) {
            Drop(fd);
            continue;
          }
        }
        if (fds[i].revents & POLLOUT) {
          if (!WriteTo(fd)) Drop(fd);
        }
      }
      ExpireWaiters();
    }
  }

  void Accept() {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    net::TuneSocket(fd);
    char host[NI_MAXHOST] = "?";
    ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST);
    clients_[fd].peer = host;
  }

  bool ReadFrom(int fd) {
    Client& c = clients_[fd];
    char buf[65536];
    while (true) {
      ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return false;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return false;
    }
    while (c.in.size() >= 4) {
      uint32_t len;
      std::memcpy(&len, c.in.data(), 4);
      if (len > kMaxMessage || len == 0) return false;
      if (c.in.size() < 4 + len) break;
      std::string msg = c.in.substr(4, len);
      c.in.erase(0, 4 + len);
      if (!Handle(fd, msg)) return false;
    }
    return true;
  }

  bool WriteTo(int fd) {
    Client& c = clients_[fd];
    while (!c.out.empty()) {
      ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    return true;
  }

  void Respond(int fd, char status, absl::string_view body) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    std::string payload(1, status);
    payload.append(body.data(), body.size());
    it->second.out.append(Frame(payload));
    WriteTo(fd);
  }

  void SetKey(const std::string& key, std::string value) {
    data_[key] = std::move(value);
    // Wake satisfied waiters.
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (Satisfied(*it)) {
        Waiter w = std::move(*it);
        it = waiters_.erase(it);
        Complete(w);
      } else {
        ++it;
      }
    }
  }

  bool Satisfied(const Waiter& w) const {
    for (const auto& k : w.keys) {
      if (data_.count(k) == 0) return false;
    }
    return true;
  }

  void Complete(const Waiter& w) {
    if (w.is_get) {
      Respond(w.fd, kOk, data_[w.keys[0]]);
    } else {
      Respond(w.fd, kOk, "");
    }
  }

  void ExpireWaiters() {
    absl::Time now = absl::Now();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->deadline <= now) {
        std::vector<std::string> missing;
        for (const auto& k : it->keys) {
          if (data_.count(k) == 0) missing.push_back(k);
        }
        Respond(it->fd, kTimeout, absl::StrJoin(missing, ", "));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }

  bool Handle(int fd, const std::string& msg) {
    Client& c = clients_[fd];
    char op = msg[0];
    Reader r(absl::string_view(msg).substr(1));
    switch (op) {
      case kHello:
        c.rank = r.I32();
        if (!r.ok()) return false;
        Respond(fd, kOk, "");
        return true;
      case kBye:
        c.said_bye = true;
        Respond(fd, kOk, "");
        return true;
      case kSet: {
        std::string key = r.Str();
        std::string value = r.Str();
        if (!r.ok()) return false;
        Respond(fd, kOk, "");
        SetKey(key, std::move(value));
        return true;
      }
      case kGet:
      case kWait: {
        int64_t timeout_ms = r.I64();
        Waiter w{fd, {}, op == kGet, absl::Now() + absl::Milliseconds(timeout_ms)};
        if (op == kGet) {
          w.keys.push_back(r.Str());
        } else {
          uint32_t n = r.U32();
          for (uint32_t i = 0; i < n && r.ok(); ++i) w.keys.push_back(r.Str());
        }
        if (!r.ok()) return false;
        if (Satisfied(w)) {
          Complete(w);
        } else {
          waiters_.push_back(std::move(w));
        }
        return true;
      }
      case kAdd: {
        std::string key = r.Str();
        int64_t delta = r.I64();
        if (!r.ok()) return false;
        int64_t value = 0;
        auto it = data_.find(key);
        if (it != data_.end() && it->second.size() == 8) std::memcpy(&value, it->second.data(), 8);
        value += delta;
        std::string encoded(8, '\0');
        std::memcpy(encoded.data(), &value, 8);
        Respond(fd, kOk, encoded);
        SetKey(key, encoded);
        return true;
      }
      case kDelete: {
        std::string key = r.Str();
        if (!r.ok()) return false;
        data_.erase(key);
        Respond(fd, kOk, "");
        return true;
      }
      default:
        Respond(fd, kError, absl::StrCat("unknown store operation '", std::string(1, op), "'"));
        return true;
    }
  }

  void Drop(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client c = std::move(it->second);
    clients_.erase(it);
    ::close(fd);
    for (auto w = waiters_.begin(); w != waiters_.end();) {
      w = (w->fd == fd) ? waiters_.erase(w) : std::next(w);
    }
    if (c.rank >= 0 && !c.said_bye && data_.count(kFailureKey) == 0) {
      std::string notice = absl::StrCat("rank ", c.rank, " (", c.peer,
                                        ") disconnected from the rendezvous store without "
                                        "closing: the process died or was killed");
      COHORT_LOG(WARNING) << notice;
      SetKey(kFailureKey, notice);
      SetKey(absl::StrCat(kFailureKey, "/rank"), std::to_string(c.rank));
    }
  }

  int listen_fd_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::map<int, Client> clients_;
  std::map<std::string, std::string> data_;
  std::deque<Waiter> waiters_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(const std::string& host,
                                                                      int port) {
  int bound = 0;
  COHORT_ASSIGN_OR_RETURN(int fd, net::Listen(host, port, &bound));
  std::unique_ptr<TcpStoreServer> server(new TcpStoreServer());
  server->port_ = bound;
  server->impl_ = std::make_unique<Impl>(fd);
  return server;
}

TcpStoreServer::~TcpStoreServer() = default;

// ---------------------------------------------------------------------------------------------
// Client

absl::StatusOr<std::unique_ptr<TcpStore>> TcpStore::Connect(const net::HostPort& address,
                                                            const Options& options) {
  COHORT_ASSIGN_OR_RETURN(
      int fd, net::Connect(address, absl::Now() + options.connect_timeout, "rendezvous store"));
  std::unique_ptr<TcpStore> store(new TcpStore(fd, address));
  std::string payload;
  int32_t rank = options.rank;
  payload.append(reinterpret_cast<const char*>(&rank), 4);
  COHORT_RETURN_IF_ERROR(store->Call(kHello, payload, absl::ZeroDuration()).status());
  return store;
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) {
    // A courtesy: when the goodbye cannot be sent (the server is gone or stopping), closing the
    // connection below tells the server the same.
    Call(kBye, "", absl::ZeroDuration()).IgnoreError();
    ::close(fd_);
  }
}

void TcpStore::Interrupt() { ::shutdown(fd_, SHUT_RDWR); }

absl::StatusOr<std::string> TcpStore::Call(char op, const std::string& payload,
                                           absl::Duration wait) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string request(1, op);
  request.append(payload);
  std::string framed = Frame(request);
  // Replies to plain requests come at once; waits come by their deadline. The margin covers
  // a slow network and a busy server.
  absl::Time deadline = absl::Now() + wait + absl::Seconds(30);
  auto context = [&](const absl::Status& s) {
    return Annotate(s, absl::StrCat("rendezvous store at ", address_.ToString()));
  };
  absl::Status s = net::SendAll(fd_, framed.data(), framed.size(), deadline);
  if (!s.ok()) return context(s);
  uint32_t len = 0;
  s = net::RecvAll(fd_, &len, 4, deadline);
  if (!s.ok()) return context(s);
  if (len == 0 || len > kMaxMessage) {
    return absl::DataLossError(absl::StrCat("rendezvous store at ", address_.ToString(),
                                            ": malformed reply (length ", len, ")"));
  }
  std::string reply(len, '\0');
  s = net::RecvAll(fd_, reply.data(), len, deadline);
  if (!s.ok()) return context(s);
  char status = reply[0];
  std::string body = reply.substr(1);
  if (status == kOk) return body;
  if (status == kTimeout) return absl::DeadlineExceededError(body);
  return absl::InternalError(
      absl::StrCat("rendezvous store at ", address_.ToString(), ": ", body));
}

absl::Status TcpStore::Set(absl::string_view key, absl::string_view value) {
  std::string payload;
  PutStr(payload, key);
  PutStr(payload, value);
  return Call(kSet, payload, absl::ZeroDuration()).status();
}

absl::StatusOr<std::string> TcpStore::Get(absl::string_view key, absl::Duration timeout) {
  std::string payload;
  PutI64(payload, absl::ToInt64Milliseconds(timeout));
  PutStr(payload, key);
  auto result = Call(kGet, payload, timeout);
  if (absl::IsDeadlineExceeded(result.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("key '", key, "' did not appear in the rendezvous store at ",
                     address_.ToString(), " within ", absl::FormatDuration(timeout)));
  }
  return result;
}

absl::StatusOr<int64_t> TcpStore::Add(absl::string_view key, int64_t delta) {
  std::string payload;
  PutStr(payload, key);
  PutI64(payload, delta);
  COHORT_ASSIGN_OR_RETURN(std::string reply, Call(kAdd, payload, absl::ZeroDuration()));
  int64_t value = 0;
  if (reply.size() != 8) return absl::DataLossError("malformed Add reply from rendezvous store");
  std::memcpy(&value, reply.data(), 8);
  return value;
}

absl::Status TcpStore::Wait(const std::vector<std::string>& keys, absl::Duration timeout) {
  std::string payload;
  PutI64(payload, absl::ToInt64Milliseconds(timeout));
  PutU32(payload, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) PutStr(payload, k);
  auto result = Call(kWait, payload, timeout);
  if (absl::IsDeadlineExceeded(result.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("keys still missing from the rendezvous store at ", address_.ToString(),
                     " after ", absl::FormatDuration(timeout), ": ", result.status().message()));
  }
  return result.status();
}

absl::Status TcpStore::Delete(absl::string_view key) {
  std::string payload;
  PutStr(payload, key);
  return Call(kDelete, payload, absl::ZeroDuration()).status();
}

// ---------------------------------------------------------------------------------------------
// FailureWatcher

absl::StatusOr<std::unique_ptr<FailureWatcher>> FailureWatcher::Start(
    const net::HostPort& address, std::string key,
    std::function<void(const std::string&)> on_failure) {
  std::unique_ptr<FailureWatcher> watcher(new FailureWatcher());
  COHORT_ASSIGN_OR_RETURN(watcher->store_, TcpStore::Connect(address, TcpStore::Options{}));
  FailureWatcher* self = watcher.get();
  watcher->thread_ = std::thread([self, key = std::move(key), cb = std::move(on_failure)] {
    while (!self->stop_) {
      auto notice = self->store_->Get(key, absl::Seconds(60));
      if (self->stop_) return;
      if (notice.ok()) {
        cb(*notice);
        return;
      }
      if (!absl::IsDeadlineExceeded(notice.status())) {
        // The store itself is gone: its host (node 0's launcher or rank 0) died.
        cb(absl::StrCat("lost the rendezvous store (", notice.status().message(),
                        "): the chief process died or was killed"));
        return;
      }
    }
  });
  return watcher;
}

FailureWatcher::~FailureWatcher() {
  stop_ = true;
  store_->Interrupt();
  thread_.join();
}

}  // namespace cohort::comm
