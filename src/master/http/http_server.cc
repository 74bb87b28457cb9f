#include "master/http/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "common/net.h"
#include "wire/limits.h"

namespace cohort::master::http {

const size_t HttpServer::kMaxBodyBytes = wire::kMaxContextBytes + (1u << 20);

namespace {

// A request's head (line and headers) and libmicrohttpd's buffers: a larger head is 431.
constexpr size_t kMemoryPerConnection = 64 << 10;
// What a streamed answer may hold between its producer and the socket, and the most one read
// of it takes.
constexpr size_t kStreamBufferBytes = 256 << 10;
constexpr size_t kStreamBlockBytes = 64 << 10;
// How long a stop waits for the requests begun to be answered.
constexpr absl::Duration kStopGrace = absl::Seconds(3);
// TLS 1.2 or later (GnuTLS's priority string).
constexpr char kTlsPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// A streamed answer (Reply::stream): the route's producer runs on a thread of its own, started
// at the first read (a HEAD never starts it), and writes into a bounded buffer that
// libmicrohttpd's reader drains on the connection's thread. The producer's writes wait while
// the buffer is full and fail once the connection is done (the client went away).
class StreamPump {
 public:
  explicit StreamPump(std::function<bool(httplib::DataSink&)> stream)
      : stream_(std::move(stream)) {}
  // The connection is done with the answer: the producer's next write fails; joins it.
  ~StreamPump() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
    }
    cv_.SignalAll();
    if (producer_.joinable()) producer_.join();
  }
  StreamPump(const StreamPump&) = delete;
  StreamPump& operator=(const StreamPump&) = delete;

  // Up to `max` bytes into `out`, waiting until the producer writes some or ends (the producer
  // bounds that wait: it packs files, and its writes fail once the connection is closed).
  ssize_t Read(char* out, size_t max) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
    while (buffer_.empty() && !finished_) cv_.Wait(&mu_);
    if (buffer_.empty()) {
      return failed_ ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    }
    const size_t n = std::min(max, buffer_.size());
    std::memcpy(out, buffer_.data(), n);
    buffer_.erase(0, n);
    cv_.SignalAll();
    return static_cast<ssize_t>(n);
  }

 private:
  void Produce() ABSL_LOCKS_EXCLUDED(mu_) {
    httplib::DataSink sink;
    sink.write = [this](const char* data, size_t size) { return Put(data, size); };
    sink.is_writable = [this] {
      MutexLock lock(&mu_);
      return !closed_;
    };
    sink.done = [] {};
    bool ok = false;
    try {
      ok = stream_(sink);
    } catch (const std::exception& e) {
      COHORT_LOG(ERROR) << "a streamed answer failed: " << e.what();
    }
    MutexLock lock(&mu_);
    finished_ = true;
    failed_ = !ok;
    cv_.SignalAll();
  }
  bool Put(const char* data, size_t size) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    while (!closed_ && buffer_.size() >= kStreamBufferBytes) cv_.Wait(&mu_);
    if (closed_) return false;
    buffer_.append(data, size);
    cv_.SignalAll();
    return true;
  }

  const std::function<bool(httplib::DataSink&)> stream_;
  Mutex mu_;
  CondVar cv_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread producer_ ABSL_GUARDED_BY(mu_);  // started by the first Read, joined at the end
};

ssize_t ReadStream(void* pump, uint64_t /*position*/, char* out, size_t max) {
  return static_cast<StreamPump*>(pump)->Read(out, max);
}
void FreeStream(void* pump) { delete static_cast<StreamPump*>(pump); }

}  // namespace

// What the callbacks share: the routes, and the requests begun and not yet completed (a stop
// lets them finish).
struct HttpServer::Serving {
  std::shared_ptr<const Router::Table> table;
  Mutex mu;
  CondVar idle;
  int active ABSL_GUARDED_BY(mu) = 0;
};

namespace {

// One request while it is received: libmicrohttpd's per-request state.
struct Exchange {
  httplib::Request request;
  Router::Table::Admission admission;            // decided from the head (Table::Admit)
  size_t received = 0;                           // body bytes so far
  bool refused = false;                          // answered before its body was read
  MHD_PostProcessor* form = nullptr;             // a multipart body's parser, into request.files
  httplib::MultipartFormDataMap::iterator part;  // the form part being received
  bool in_part = false;
  ~Exchange() {
    if (form != nullptr) MHD_destroy_post_processor(form);
  }
};

// One header or query parameter into `Map` (httplib::Headers or httplib::Params); a parameter
// without a value ("?follow") is "".
template <typename Map>
MHD_Result AddValue(void* map, MHD_ValueKind, const char* key, const char* value) {
  static_cast<Map*>(map)->emplace(key, value != nullptr ? value : "");
  return MHD_YES;
}

// One piece of a multipart body's part `key` (libmicrohttpd's post processor); a part starts
// at offset 0.
MHD_Result AddFormData(void* exchange, MHD_ValueKind, const char* key, const char* filename,
                       const char* content_type, const char*, const char* data, uint64_t offset,
                       size_t size) {
  Exchange& ex = *static_cast<Exchange*>(exchange);
  if (offset == 0 || !ex.in_part || ex.part->first != key) {
    ex.part = ex.request.files.emplace(
        key, httplib::MultipartFormData{key, "", filename != nullptr ? filename : "",
                                        content_type != nullptr ? content_type : ""});
    ex.in_part = true;
  }
  ex.part->second.content.append(data, size);
  return MHD_YES;
}

void SetRemote(MHD_Connection* connection, httplib::Request& request) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return;
  char text[INET6_ADDRSTRLEN] = "";
  const sockaddr* address = info->client_addr;
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    request.remote_port = ntohs(in->sin_port);
  } else if (address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    request.remote_port = ntohs(in6->sin6_port);
  }
  request.remote_addr = text;
}

// Hands `reply` to libmicrohttpd for `connection`; MHD_NO (the connection is closed) when it
// cannot.
MHD_Result Queue(MHD_Connection* connection, Reply reply) {
  MHD_Response* response = nullptr;
  if (reply.stream) {
    auto pump = std::make_unique<StreamPump>(std::move(reply.stream));
    response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlockBytes, &ReadStream,
                                                 pump.get(), &FreeStream);
    if (response != nullptr) pump.release();  // the response's free callback deletes it
  } else {
    response = MHD_create_response_from_buffer(reply.body.size(), reply.body.data(),
                                               MHD_RESPMEM_MUST_COPY);
  }
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, "Content-Type", reply.content_type.c_str());
  for (const auto& [name, value] : reply.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  const MHD_Result queued =
      MHD_queue_response(connection, static_cast<unsigned>(reply.code), response);
  MHD_destroy_response(response);
  return queued;
}

// The body the request's head announces: its Content-Length, 0 for none, and more than any
// limit for a chunked or unreadable one.
uint64_t DeclaredBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return UINT64_MAX;
  if (!req.has_header("Content-Length")) return 0;
  uint64_t length = 0;
  return absl::SimpleAtoi(req.get_header_value("Content-Length"), &length) ? length : UINT64_MAX;
}

// The first call for a request: its head has been read.
MHD_Result Begin(const Router::Table& table, MHD_Connection* connection, const char* url,
                 const char* method, const char* version, void** state) {
  auto* ex = new Exchange;
  *state = ex;  // deleted by Completed, whatever happens next
  httplib::Request& req = ex->request;
  req.method = method;
  req.path = url;
  req.version = version;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &AddValue<httplib::Headers>, &req.headers);
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &AddValue<httplib::Params>,
                            &req.params);
  SetRemote(connection, req);
  // Route, browser guard, authentication and declared size from the head alone: a refused
  // request's body is never kept (Router::Table::Admit).
  ex->admission = table.Admit(req);
  if (ex->admission.refusal) {
    // A body it declares within the master's limit is read and dropped (kept nowhere), then
    // the refusal answered, so the client reads it and keeps its connection; any other body is
    // answered now, which makes libmicrohttpd close the connection with the body unread.
    if (DeclaredBody(req) <= HttpServer::kMaxBodyBytes) return MHD_YES;  // answered at its end
    ex->refused = true;
    return Queue(connection, *ex->admission.refusal);
  }
  ex->admission.max_body = std::min(ex->admission.max_body, HttpServer::kMaxBodyBytes);
  if (req.is_multipart_form_data()) {
    ex->form = MHD_create_post_processor(connection, 8 << 10, &AddFormData, ex);
    if (ex->form == nullptr) {
      ex->refused = true;
      return Queue(connection, table.Refuse(req, absl::InvalidArgumentError(
                                                     "a multipart body must name its boundary "
                                                     "in its Content-Type")));
    }
  }
  return MHD_YES;
}

// A piece of the body.
MHD_Result Receive(const Router::Table& table, Exchange& ex, MHD_Connection* connection,
                   const char* data, size_t size) {
  if (ex.refused) return MHD_YES;  // the answer is out; the rest is dropped
  ex.received += size;
  if (ex.admission.refusal) {  // the declared body of a refused request (Begin): dropped
    if (ex.received <= HttpServer::kMaxBodyBytes) return MHD_YES;
    ex.refused = true;
    return MHD_NO;  // it sends more than it declared: close the connection
  }
  if (ex.received > ex.admission.max_body) {  // counted as it comes: chunked bodies too
    ex.refused = true;
    return Queue(connection, table.TooLargeBody(ex.admission, ex.request, ex.received));
  }
  if (ex.form == nullptr) {
    ex.request.body.append(data, size);
    return MHD_YES;
  }
  if (MHD_post_process(ex.form, data, size) == MHD_YES) return MHD_YES;
  ex.refused = true;
  return Queue(connection,
               table.Refuse(ex.request, absl::InvalidArgumentError(
                                            "the multipart body does not parse as form data")));
}

MHD_Result Access(void* serving_ptr, MHD_Connection* connection, const char* url,
                  const char* method, const char* version, const char* upload_data,
                  size_t* upload_data_size, void** state) {
  auto& serving = *static_cast<HttpServer::Serving*>(serving_ptr);
  const Router::Table& table = *serving.table;
  try {
    if (*state == nullptr) {
      {
        MutexLock lock(&serving.mu);
        ++serving.active;  // until Completed
      }
      return Begin(table, connection, url, method, version, state);
    }
    Exchange& ex = *static_cast<Exchange*>(*state);
    if (*upload_data_size != 0) {
      const size_t size = *upload_data_size;
      *upload_data_size = 0;
      return Receive(table, ex, connection, upload_data, size);
    }
    if (ex.refused) return MHD_YES;
    if (ex.admission.refusal) return Queue(connection, *ex.admission.refusal);  // body dropped
    if (ex.form != nullptr) {
      MHD_destroy_post_processor(ex.form);
      ex.form = nullptr;
    }
    return Queue(connection, table.Serve(ex.admission, ex.request));
  } catch (const std::exception& e) {  // no exception may cross into C: close the connection
    COHORT_LOG(ERROR) << method << " " << url << ": " << e.what();
    return MHD_NO;
  }
}

// A request ended: answered, or its connection closed. Called only for requests Access saw.
void Completed(void* serving_ptr, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
  delete static_cast<Exchange*>(*state);
  *state = nullptr;
  auto& serving = *static_cast<HttpServer::Serving*>(serving_ptr);
  MutexLock lock(&serving.mu);
  if (--serving.active == 0) serving.idle.SignalAll();
}

void Log(void*, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  std::string line = text;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  COHORT_LOG(WARNING) << "HTTP server: " << line;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, int listen_fd, int port)
    : options_(std::move(options)), listen_fd_(listen_fd), port_(port) {}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(HttpServerOptions options) {
  int port = 0;
  COHORT_ASSIGN_OR_RETURN(int fd, net::Listen(options.host, options.port, &port, kListenBacklog));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(options), fd, port));
}

absl::Status HttpServer::Serve(std::shared_ptr<const Router::Table> table) {
  if (daemon_ != nullptr || stopped_ || listen_fd_ < 0) {
    return absl::FailedPreconditionError("the HTTP server is serving already, or stopped");
  }
  serving_ = std::make_unique<Serving>();
  serving_->table = std::move(table);
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG;
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Log), nullptr},  // first: all go
      {MHD_OPTION_LISTEN_SOCKET, listen_fd_, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, options_.max_connections, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT,
       static_cast<intptr_t>(std::max<int64_t>(1, absl::ToInt64Seconds(options_.idle_timeout))),
       nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(kMemoryPerConnection), nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Completed), serving_.get()},
  };
  if (https()) {
    flags |= MHD_USE_TLS;
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, options_.tls.cert_pem.data()});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, options_.tls.key_pem.data()});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Access, serving_.get(), MHD_OPTION_ARRAY,
                             items.data(), MHD_OPTION_END);
  if (daemon_ == nullptr) {
    return absl::InternalError(absl::StrCat("the HTTP server on port ", port_,
                                            " did not start (its reason is logged above)"));
  }
  listen_fd_ = -1;  // libmicrohttpd's now: it closes it when stopped
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (daemon_ != nullptr) {
    // No new connections; the requests begun get until the deadline to be answered (a long
    // poll ended by Master::BeginShutdown answers at once), then every connection is closed.
    const MHD_socket listening = MHD_quiesce_daemon(daemon_);
    {
      const absl::Time deadline = absl::Now() + kStopGrace;
      MutexLock lock(&serving_->mu);
      bool timed_out = false;
      while (serving_->active != 0 && !timed_out) {
        timed_out = serving_->idle.WaitWithDeadline(&serving_->mu, deadline);
      }
      if (serving_->active != 0) {
        COHORT_LOG(WARNING) << "HTTP server: stopping with " << serving_->active
                            << " request(s) still unanswered after "
                            << absl::FormatDuration(kStopGrace);
      }
    }
    MHD_stop_daemon(daemon_);
    if (listening != MHD_INVALID_SOCKET) ::close(listening);
  }
  daemon_ = nullptr;
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace cohort::master::http
