#pragma once
// S3Client: objects in one bucket of an S3-compatible store, over libcurl, which signs every
// request (AWS Signature Version 4, CURLOPT_AWS_SIGV4; checked against AWS's published example
// requests in s3_client_test.cc). Path-style addressing for an `endpoint_url` (MinIO, Ceph,
// s3rver...), virtual-hosted for AWS itself.
//
// Large objects go in parts, several at once: an upload above `part_bytes` is a multipart
// upload (aborted when a part fails, so no half object is ever visible), a download above it is
// ranged GETs written in place; memory stays under `parallel` × `part_bytes` per call.
// A request that fails in a way a retry may mend (no connection, a stall, 5xx, 429, 403) is
// retried with exponential back-off up to `max_attempts`; then the error names the bucket, the
// key, the operation and what the store said (its error code and message), never a credential.
// A transfer that moves no byte for `stall_timeout` is a failure (every wait has a deadline).
//
// Thread-safe: calls may run at once from any thread (each request has its own curl handle,
// taken from a pool).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "objstore/s3_credentials.h"

namespace cohort::objstore {

struct S3Options {
  std::string bucket;
  // "http://127.0.0.1:9000" (path-style: ENDPOINT/BUCKET/KEY); empty: AWS in `region`
  // (virtual-hosted: https://BUCKET.s3.REGION.amazonaws.com/KEY).
  std::string endpoint_url;
  std::string region = "us-east-1";
  S3Credentials credentials;
  int64_t part_bytes = 16LL << 20;  // 5 MiB .. 1 GiB
  int parallel = 4;                 // parts in flight per upload or download, 1 .. 32
  int max_attempts = 5;             // per request
  absl::Duration first_backoff = absl::Milliseconds(200);  // doubled per retry, jittered
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration stall_timeout = absl::Seconds(30);  // no byte moved this long: failed
  // Address the bucket as a host name (BUCKET.ENDPOINT-HOST) rather than a path, also with
  // an endpoint_url (some stores, and AWS's own examples, want it).
  bool virtual_hosted = false;
  // Tests only: sign with this x-amz-date ("20130524T000000Z") instead of the clock's, and
  // connect to another address than the URL's ("HOST:PORT:CONNECT-HOST:CONNECT-PORT", as
  // curl's CURLOPT_CONNECT_TO).
  std::string fixed_amz_date;
  std::string connect_to;
};

struct ObjectInfo {
  std::string key;
  int64_t size = 0;
};

class S3Client {
 public:
  // InvalidArgument for options out of range or an endpoint that is not http(s)://host[:port].
  static absl::StatusOr<std::unique_ptr<S3Client>> Create(S3Options options);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // "s3://bucket" (and the endpoint when one is set): what messages name.
  std::string Describe() const;
  // "s3://bucket/key".
  std::string Url(absl::string_view key) const;

  absl::Status PutString(const std::string& key, absl::string_view body);
  // The local file's bytes as object `key` (in parts above part_bytes).
  absl::Status PutFile(const std::string& key, const std::string& path);
  // The object's bytes; FailedPrecondition when it is larger than `max_bytes`; NotFound when
  // there is no such object.
  absl::StatusOr<std::string> GetString(const std::string& key, int64_t max_bytes);
  // Writes the object to the local file `path` (created or truncated); NotFound as above.
  absl::Status GetFile(const std::string& key, const std::string& path);
  // The object's size, or nullopt when there is none.
  absl::StatusOr<std::optional<int64_t>> Head(const std::string& key);
  // The objects whose keys start with `prefix`, in key order; FailedPrecondition when there are
  // more than `max_keys`. With a `delimiter` ("/"), only the keys with no delimiter after the
  // prefix (one level, as a directory's files).
  absl::StatusOr<std::vector<ObjectInfo>> List(const std::string& prefix, int64_t max_keys,
                                               const std::string& delimiter = "");
  // OK whether or not the object was there.
  absl::Status Delete(const std::string& key);

  // One signed request as given, without retries, for what the calls above do not wrap (and
  // the signing's tests): `query` is sent sorted, every name with '=' (as SigV4 signs it);
  // `headers` ("Name: value") are signed too. The answer's status and body (at most 1 MiB).
  struct Answer {
    long status = 0;
    std::string body;
  };
  absl::StatusOr<Answer> Send(const std::string& method, const std::string& key,
                              const std::map<std::string, std::string>& query,
                              const std::vector<std::string>& headers);

  struct Impl;

 private:
  explicit S3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters kept, every other byte
// %XX (upper case); '/' kept when `keep_slash` (object keys in paths).
std::string UriEncode(absl::string_view text, bool keep_slash);

}  // namespace cohort::objstore
