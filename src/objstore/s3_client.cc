#include "objstore/s3_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/mutex.h"
#include "objstore/s3_xml.h"

namespace cohort::objstore {
namespace {

constexpr int64_t kMinPart = 5LL << 20;   // S3's smallest part but the last
constexpr int64_t kMaxPart = 1LL << 30;
constexpr int kMaxParts = 10000;          // S3's limit per upload
constexpr size_t kMaxErrorBody = 64 << 10;  // of an error answer, kept to read its code
constexpr size_t kMaxXmlAnswer = 8 << 20;   // a listing page or an upload's id
constexpr char kUnsignedPayload[] = "x-amz-content-sha256: UNSIGNED-PAYLOAD";
constexpr char kEmptyPayload[] =  // SHA-256 of no bytes
    "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// One request: method, key (empty: the bucket), the query as sorted name -> value (SigV4
// signs it as given, so it is built sorted and encoded here), extra headers, and the body.
struct Request {
  std::string method = "GET";
  std::string key;
  std::map<std::string, std::string> query;
  std::vector<std::string> headers;
  absl::string_view body;  // PUT/POST
};

// Where an answer's body goes: a bounded string, or a file at an offset (ranged downloads).
// An error answer's body (any status but 2xx) goes to `error_body` instead, bounded.
struct Sink {
  std::string* text = nullptr;
  size_t max = 0;
  int fd = -1;
  int64_t offset = 0;
  bool overflow = false;
  int write_errno = 0;
  // Per attempt: the handle (to read the status at the first byte) and where the body goes.
  CURL* handle = nullptr;
  int answer = 0;  // 0: not known yet; 1: a 2xx answer; 2: an error answer
  std::string error_body;
};

struct Response {
  long status = 0;
  std::string body;  // error answers and XML answers (bounded)
  std::string etag;
  int64_t content_length = -1;
};

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  Sink& sink = *static_cast<Sink*>(user);
  const size_t bytes = size * n;
  if (sink.answer == 0) {
    long status = 0;
    curl_easy_getinfo(sink.handle, CURLINFO_RESPONSE_CODE, &status);
    sink.answer = status >= 200 && status < 300 ? 1 : 2;
  }
  if (sink.answer == 2) {
    const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, sink.error_body.size());
    sink.error_body.append(data, std::min(room, bytes));
    return bytes;
  }
  if (sink.fd >= 0) {
    size_t done = 0;
    while (done < bytes) {
      const ssize_t w = ::pwrite(sink.fd, data + done, bytes - done, sink.offset);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        sink.write_errno = w < 0 ? errno : EIO;
        return 0;  // curl fails the transfer (CURLE_WRITE_ERROR)
      }
      done += static_cast<size_t>(w);
      sink.offset += w;
    }
    return bytes;
  }
  if (sink.text->size() + bytes > sink.max) {
    sink.overflow = true;
    return 0;
  }
  sink.text->append(data, bytes);
  return bytes;
}

struct HeaderSeen {
  std::string etag;
  int64_t content_length = -1;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  HeaderSeen& seen = *static_cast<HeaderSeen*>(user);
  const absl::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    const absl::string_view name = absl::StripAsciiWhitespace(line.substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "etag")) seen.etag = std::string(value);
    if (absl::EqualsIgnoreCase(name, "content-length")) {
      int64_t v = 0;
      if (absl::SimpleAtoi(value, &v)) seen.content_length = v;
    }
  }
  return size * n;
}

struct Upload {
  absl::string_view body;
  size_t at = 0;
};

size_t OnRead(char* into, size_t size, size_t n, void* user) {
  Upload& up = *static_cast<Upload*>(user);
  const size_t bytes = std::min(size * n, up.body.size() - up.at);
  std::memcpy(into, up.body.data() + up.at, bytes);
  up.at += bytes;
  return bytes;
}

bool Retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

bool Retryable(long status) { return status >= 500 || status == 429 || status == 403; }

// "403 AccessDenied (Access Denied)" from an S3 error answer.
std::string Said(const Response& r) {
  std::string said = absl::StrCat(r.status);
  absl::StatusOr<XmlFields> fields = ParseXmlFields(r.body);
  if (fields.ok()) {
    const std::string code = FirstField(*fields, "Error/Code");
    const std::string message = FirstField(*fields, "Error/Message");
    if (!code.empty()) absl::StrAppend(&said, " ", code);
    if (!message.empty()) absl::StrAppend(&said, " (", message.substr(0, 200), ")");
  }
  return said;
}

absl::StatusCode CodeFor(long status) {
  if (status == 404) return absl::StatusCode::kNotFound;
  if (status == 403 || status == 401) return absl::StatusCode::kPermissionDenied;
  if (status >= 500 || status == 429) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kFailedPrecondition;
}

std::string Errno(int e) { return std::strerror(e); }

}  // namespace

std::string UriEncode(absl::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

struct S3Client::Impl {
  S3Options options;
  std::string base;  // "http://host:port/bucket" or "https://bucket.s3.region.amazonaws.com"
  std::string sigv4;  // "aws:amz:REGION:s3"
  std::string userpwd;
  Mutex mu;
  std::vector<CURL*> idle ABSL_GUARDED_BY(mu);  // handles kept for their connections

  ~Impl() {
    for (CURL* h : idle) curl_easy_cleanup(h);
  }
  CURL* Take() ABSL_LOCKS_EXCLUDED(mu) {
    {
      MutexLock lock(&mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        curl_easy_reset(h);
        return h;
      }
    }
    return curl_easy_init();
  }
  void Give(CURL* h) ABSL_LOCKS_EXCLUDED(mu) {
    MutexLock lock(&mu);
    if (idle.size() < 64) {
      idle.push_back(h);
      return;
    }
    curl_easy_cleanup(h);
  }

  std::string UrlOf(const Request& r) const {
    std::string url = absl::StrCat(base, "/", UriEncode(r.key, true));
    std::vector<std::string> parts;
    for (const auto& [name, value] : r.query) {
      // "name=" even without a value: SigV4's canonical query has the '=' (AWS's example).
      parts.push_back(absl::StrCat(UriEncode(name, false), "=", UriEncode(value, false)));
    }
    if (!parts.empty()) absl::StrAppend(&url, "?", absl::StrJoin(parts, "&"));
    return url;
  }

  // The request's headers: the payload's hash (a body is sent unsigned: it may be gigabytes,
  // hashed twice; an empty one as SHA-256 of nothing; a caller's own header wins), the fixed
  // date (tests), the session token, the caller's. libcurl signs them all.
  curl_slist* HeadersFor(const Request& r) const {
    curl_slist* headers = nullptr;
    if (!std::any_of(r.headers.begin(), r.headers.end(), [](const std::string& h) {
          return absl::StartsWithIgnoreCase(h, "x-amz-content-sha256:");
        })) {
      headers = curl_slist_append(
          headers, r.method == "PUT" || r.method == "POST" ? kUnsignedPayload : kEmptyPayload);
    }
    if (!options.fixed_amz_date.empty()) {
      headers = curl_slist_append(headers, ("x-amz-date: " + options.fixed_amz_date).c_str());
    }
    if (!options.credentials.session_token.empty()) {
      headers = curl_slist_append(
          headers, ("x-amz-security-token: " + options.credentials.session_token).c_str());
    }
    for (const std::string& extra : r.headers) headers = curl_slist_append(headers, extra.c_str());
    // No "Expect:" to turn 100-continue off: libcurl would sign the empty header it does not
    // send, and the store would refuse the signature.
    return headers;
  }

  // One attempt. Transport failures are returned as the CURLcode with curl's message.
  CURLcode Attempt(const Request& r, Sink& sink, Response* out, std::string* error) {
    CURL* h = Take();
    if (h == nullptr) {
      *error = "cannot create a curl handle";
      return CURLE_OUT_OF_MEMORY;
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    const std::string url = UrlOf(r);
    curl_slist* headers = HeadersFor(r);
    HeaderSeen seen;
    Upload up{r.body};
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(options.connect_timeout)));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(absl::ToInt64Seconds(options.stall_timeout))));
    sink.handle = h;
    sink.answer = 0;
    sink.error_body.clear();
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnWrite);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &seen);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_slist* connect_to = nullptr;
    if (!options.connect_to.empty()) {
      connect_to = curl_slist_append(nullptr, options.connect_to.c_str());
      curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to);
    }
    if (r.method == "PUT" || r.method == "POST") {
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
      curl_easy_setopt(h, CURLOPT_READDATA, &up);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    }
    if (r.method == "HEAD") curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (r.method != "GET" && r.method != "PUT" && r.method != "HEAD") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    const CURLcode code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    Give(h);
    out->etag = seen.etag;
    out->content_length = seen.content_length;
    if (code != CURLE_OK) *error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
    return code;
  }

  // The request with retries. A 2xx answer is returned; `quiet_404` returns a 404 too (Head,
  // Delete). `what` names the operation for errors ("PUT s3://b/k").
  absl::StatusOr<Response> Perform(const Request& r, Sink& sink, bool quiet_404) {
    const std::string what = absl::StrCat(r.method, " s3://", options.bucket, "/", r.key);
    std::mt19937_64 jitter(std::random_device{}());
    absl::Duration backoff = options.first_backoff;
    std::string last;
    absl::StatusCode last_code = absl::StatusCode::kUnavailable;
    for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
      Response response;
      std::string error;
      const int64_t start_offset = sink.offset;
      const size_t start_size = sink.text != nullptr ? sink.text->size() : 0;
      const CURLcode code = Attempt(r, sink, &response, &error);
      const bool ok_status = response.status >= 200 && response.status < 300;
      if (code == CURLE_OK && (ok_status || (quiet_404 && response.status == 404))) {
        return response;
      }
      if (sink.overflow) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the answer is larger than ", sink.max, " bytes"));
      }
      if (sink.write_errno != 0) {
        return absl::UnavailableError(
            absl::StrCat(what, ": writing the local file: ", Errno(sink.write_errno)));
      }
      // What a failed attempt wrote is written again by the next.
      response.body = sink.error_body;
      if (sink.text != nullptr) sink.text->resize(start_size);
      sink.offset = start_offset;
      bool retry = false;
      if (code != CURLE_OK) {
        last = absl::StrCat("cannot reach the store: ", error);
        retry = Retryable(code);
      } else {
        last = absl::StrCat("the store answered ", Said(response));
        last_code = CodeFor(response.status);
        retry = Retryable(response.status);
        if (!retry) {
          return absl::Status(CodeFor(response.status), absl::StrCat(what, ": ", last));
        }
      }
      if (!retry) return absl::UnavailableError(absl::StrCat(what, ": ", last));
      if (attempt == options.max_attempts) break;
      std::uniform_real_distribution<double> spread(0.5, 1.5);
      absl::SleepFor(backoff * spread(jitter));
      backoff = std::min(backoff * 2, absl::Seconds(10));
    }
    return absl::Status(last_code, absl::StrCat(what, ": ", last, " (after ",
                                                options.max_attempts, " attempts)"));
  }

  absl::StatusOr<std::string> Xml(const Request& r) {
    std::string body;
    Sink sink{&body, kMaxXmlAnswer};
    COHORT_RETURN_IF_ERROR(Perform(r, sink, false).status());
    return body;
  }

  absl::Status PutParts(const std::string& key, int fd, int64_t size);
  // Every part of the file (`part` bytes each, the last shorter) through `parallel` threads,
  // each with one part's buffer; the parts' ETags in `etags`. The first failure stops them.
  absl::Status UploadParts(const std::string& key, const std::string& upload_id, int fd,
                           int64_t size, int64_t part, std::vector<std::string>* etags);
  absl::StatusOr<Response> PutPart(const std::string& key, const std::string& upload_id,
                                   int number, absl::string_view body) {
    std::string ignored;
    Sink sink{&ignored, kMaxErrorBody};
    return Perform({.method = "PUT",
                    .key = key,
                    .query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}},
                    .body = body},
                   sink, false);
  }
  // Completes the upload from its parts' ETags; an error otherwise (S3 may answer 200 with an
  // error inside when the completion fails late).
  absl::Status CompleteUpload(const std::string& key, const std::string& upload_id,
                              const std::vector<std::string>& etags) {
    std::string complete = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags.size(); ++i) {
      absl::StrAppend(&complete, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>",
                      XmlEscape(etags[i]), "</ETag></Part>");
    }
    complete += "</CompleteMultipartUpload>";
    COHORT_ASSIGN_OR_RETURN(std::string done, Xml({.method = "POST",
                                                   .key = key,
                                                   .query = {{"uploadId", upload_id}},
                                                   .body = complete}));
    if (absl::StrContains(done, "<Error>")) {
      return absl::UnavailableError(absl::StrCat("POST s3://", options.bucket, "/", key,
                                                 ": completing the upload failed: ",
                                                 done.substr(0, 300)));
    }
    return absl::OkStatus();
  }
  absl::Status GetRanges(const std::string& key, int fd, int64_t size);
};

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;

absl::StatusOr<std::unique_ptr<S3Client>> S3Client::Create(S3Options options) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (options.bucket.empty()) return absl::InvalidArgumentError("S3: no bucket named");
  if (options.part_bytes < kMinPart || options.part_bytes > kMaxPart) {
    return absl::InvalidArgumentError(absl::StrCat("S3: the part size must be within [", kMinPart,
                                                   ", ", kMaxPart, "] bytes"));
  }
  if (options.parallel < 1 || options.parallel > 32 || options.max_attempts < 1) {
    return absl::InvalidArgumentError("S3: parallel must be within [1, 32], attempts >= 1");
  }
  auto impl = std::make_unique<Impl>();
  std::string endpoint = options.endpoint_url;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (endpoint.empty()) {
    impl->base = absl::StrCat("https://", options.bucket, ".s3.", options.region, ".amazonaws.com");
  } else if (!absl::StartsWith(endpoint, "http://") && !absl::StartsWith(endpoint, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "S3 endpoint_url '", endpoint, "' must start with http:// or https://"));
  } else if (options.virtual_hosted) {
    const size_t host = endpoint.find("://") + 3;
    impl->base = absl::StrCat(endpoint.substr(0, host), options.bucket, ".", endpoint.substr(host));
  } else {
    impl->base = absl::StrCat(endpoint, "/", UriEncode(options.bucket, false));
  }
  impl->sigv4 = absl::StrCat("aws:amz:", options.region, ":s3");
  impl->userpwd = absl::StrCat(options.credentials.access_key, ":", options.credentials.secret_key);
  impl->options = std::move(options);
  return std::unique_ptr<S3Client>(new S3Client(std::move(impl)));
}

std::string S3Client::Describe() const {
  const S3Options& o = impl_->options;
  return o.endpoint_url.empty() ? absl::StrCat("s3://", o.bucket)
                                : absl::StrCat("s3://", o.bucket, " at ", o.endpoint_url);
}

std::string S3Client::Url(absl::string_view key) const {
  return absl::StrCat("s3://", impl_->options.bucket, "/", key);
}

absl::Status S3Client::PutString(const std::string& key, absl::string_view body) {
  Request r{.method = "PUT", .key = key, .body = body};
  std::string ignored;
  Sink sink{&ignored, kMaxErrorBody};
  return impl_->Perform(r, sink, false).status();
}

absl::Status S3Client::PutFile(const std::string& key, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("opening ", path, ": ", Errno(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  absl::Status s;
  if (st.st_size <= impl_->options.part_bytes) {
    std::string body(static_cast<size_t>(st.st_size), '\0');
    ssize_t got = 0;
    while (got < st.st_size) {
      const ssize_t n = ::pread(fd, body.data() + got, body.size() - got, got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += n;
    }
    s = got == st.st_size ? PutString(key, body)
                          : absl::UnavailableError(absl::StrCat("reading ", path, ": short read"));
  } else {
    s = impl_->PutParts(key, fd, st.st_size);
  }
  ::close(fd);
  return s;
}

absl::Status S3Client::Impl::PutParts(const std::string& key, int fd, int64_t size) {
  int64_t part = options.part_bytes;
  while ((size + part - 1) / part > kMaxParts) part *= 2;  // very large files: larger parts
  const int parts = static_cast<int>((size + part - 1) / part);
  COHORT_ASSIGN_OR_RETURN(std::string created,
                          Xml({.method = "POST", .key = key, .query = {{"uploads", ""}}}));
  COHORT_ASSIGN_OR_RETURN(XmlFields fields, ParseXmlFields(created));
  const std::string upload_id = FirstField(fields, "InitiateMultipartUploadResult/UploadId");
  if (upload_id.empty()) {
    return absl::UnavailableError(absl::StrCat("POST s3://", options.bucket, "/", key,
                                               "?uploads: the answer has no UploadId"));
  }
  std::vector<std::string> etags(static_cast<size_t>(parts));
  absl::Status failed = UploadParts(key, upload_id, fd, size, part, &etags);
  if (failed.ok()) {
    failed = CompleteUpload(key, upload_id, etags);
    if (failed.ok()) return absl::OkStatus();
  }
  // Nothing half-uploaded stays: the parts are dropped (best effort: the store's lifecycle
  // rules drop what an abort that fails leaves).
  std::string ignored;
  Sink sink{&ignored, kMaxErrorBody};
  (void)Perform({.method = "DELETE", .key = key, .query = {{"uploadId", upload_id}}}, sink, true);
  return failed;
}

absl::Status S3Client::Impl::UploadParts(const std::string& key, const std::string& upload_id,
                                         int fd, int64_t size, int64_t part,
                                         std::vector<std::string>* etags) {
  const int parts = static_cast<int>(etags->size());
  std::atomic<int> next{0};
  Mutex failed_mu;
  absl::Status failed;  // the first part's failure
  auto worker = [&] {
    std::string buffer;
    for (int i = next++; i < parts; i = next++) {
      {
        MutexLock lock(&failed_mu);
        if (!failed.ok()) return;
      }
      const int64_t offset = static_cast<int64_t>(i) * part;
      buffer.resize(static_cast<size_t>(std::min(part, size - offset)));
      size_t got = 0;
      while (got < buffer.size()) {
        const ssize_t n = ::pread(fd, buffer.data() + got, buffer.size() - got, offset + got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      absl::StatusOr<Response> put =
          got == buffer.size()
              ? PutPart(key, upload_id, i + 1, buffer)
              : absl::UnavailableError("reading the local file: short read");
      MutexLock lock(&failed_mu);
      if (!put.ok()) {
        if (failed.ok()) failed = put.status();
        return;
      }
      (*etags)[static_cast<size_t>(i)] = put->etag;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(options.parallel, parts); ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  return failed;
}

absl::StatusOr<std::string> S3Client::GetString(const std::string& key, int64_t max_bytes) {
  std::string body;
  Sink sink{&body, static_cast<size_t>(std::max<int64_t>(0, max_bytes))};
  absl::StatusOr<Response> r = impl_->Perform({.key = key}, sink, false);
  if (!r.ok()) return r.status();
  return body;
}

absl::Status S3Client::GetFile(const std::string& key, const std::string& path) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> size, Head(key));
  if (!size.has_value()) return absl::NotFoundError(absl::StrCat(Url(key), " does not exist"));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("creating ", path, ": ", Errno(errno)));
  absl::Status s = impl_->GetRanges(key, fd, *size);
  if (::close(fd) != 0 && s.ok()) {
    s = absl::UnavailableError(absl::StrCat("writing ", path, ": ", Errno(errno)));
  }
  return s;
}

absl::Status S3Client::Impl::GetRanges(const std::string& key, int fd, int64_t size) {
  const int64_t part = options.part_bytes;
  const int parts = static_cast<int>(std::max<int64_t>(1, (size + part - 1) / part));
  std::atomic<int> next{0};
  Mutex failed_mu;
  absl::Status failed;
  auto worker = [&] {
    for (int i = next++; i < parts; i = next++) {
      const int64_t from = static_cast<int64_t>(i) * part;
      const int64_t to = std::min(size, from + part) - 1;
      Sink sink{.fd = fd, .offset = from};
      Request r{.key = key};
      if (size > 0) r.headers.push_back(absl::StrCat("Range: bytes=", from, "-", to));
      absl::StatusOr<Response> got = Perform(r, sink, false);
      absl::Status s = got.status();
      if (s.ok() && sink.offset != to + 1 && size > 0) {
        s = absl::UnavailableError(absl::StrCat("GET s3://", options.bucket, "/", key,
                                                ": the store sent ", sink.offset - from,
                                                " bytes of the range's ", to + 1 - from));
      }
      if (!s.ok()) {
        MutexLock lock(&failed_mu);
        if (failed.ok()) failed = s;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(options.parallel, parts); ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  return failed;
}

absl::StatusOr<std::optional<int64_t>> S3Client::Head(const std::string& key) {
  std::string ignored;
  Sink sink{&ignored, kMaxErrorBody};
  COHORT_ASSIGN_OR_RETURN(Response r, impl_->Perform({.method = "HEAD", .key = key}, sink, true));
  if (r.status == 404) return std::optional<int64_t>();
  return std::optional<int64_t>(std::max<int64_t>(0, r.content_length));
}

absl::StatusOr<std::vector<ObjectInfo>> S3Client::List(const std::string& prefix,
                                                      int64_t max_keys,
                                                      const std::string& delimiter) {
  std::vector<ObjectInfo> out;
  std::string token;
  do {
    Request r{.query = {{"list-type", "2"}, {"prefix", prefix}}};
    if (!token.empty()) r.query["continuation-token"] = token;
    if (!delimiter.empty()) r.query["delimiter"] = delimiter;
    COHORT_ASSIGN_OR_RETURN(std::string page, impl_->Xml(r));
    COHORT_ASSIGN_OR_RETURN(XmlFields fields, ParseXmlFields(page));
    token.clear();
    bool truncated = false;
    for (const auto& [path, text] : fields) {
      if (path == "ListBucketResult/Contents/Key") out.push_back({text, 0});
      if (path == "ListBucketResult/Contents/Size" && !out.empty()) {
        (void)absl::SimpleAtoi(text, &out.back().size);
      }
      if (path == "ListBucketResult/IsTruncated") truncated = text == "true";
      if (path == "ListBucketResult/NextContinuationToken") token = text;
    }
    if (static_cast<int64_t>(out.size()) > max_keys) {
      return absl::FailedPreconditionError(absl::StrCat(Url(prefix), "*: more than ", max_keys,
                                                        " objects"));
    }
    if (!truncated) token.clear();
  } while (!token.empty());
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

absl::StatusOr<S3Client::Answer> S3Client::Send(const std::string& method,
                                                const std::string& key,
                                                const std::map<std::string, std::string>& query,
                                                const std::vector<std::string>& headers) {
  Request r{.method = method, .key = key, .query = query, .headers = headers};
  Answer answer;
  Sink sink{&answer.body, 1 << 20};
  Response response;
  std::string error;
  if (impl_->Attempt(r, sink, &response, &error) != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(method, " ", Url(key), ": ", error));
  }
  answer.status = response.status;
  if (sink.answer == 2) answer.body = sink.error_body;
  return answer;
}

absl::Status S3Client::Delete(const std::string& key) {
  std::string ignored;
  Sink sink{&ignored, kMaxErrorBody};
  return impl_->Perform({.method = "DELETE", .key = key}, sink, true).status();
}

}  // namespace cohort::objstore
