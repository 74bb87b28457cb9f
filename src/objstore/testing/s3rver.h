#pragma once
// A real S3-compatible server for tests: npm's s3rver (scripts/install.sh --test puts it in
// /opt/cohort-test-tools; COHORT_S3RVER names another), started on a free loopback port with
// its own data directory and one bucket, stopped (SIGTERM, then SIGKILL) by the destructor.
// s3rver serves PUT, GET (ranges), HEAD, DELETE, ListObjectsV2 and multipart uploads; it does
// not check signatures (s3_client_test.cc checks them against AWS's examples) and refuses only
// an unknown access key. Its keys are S3RVER / S3RVER. Test-only.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/subprocess.h"
#include "common/testing/temp_dir.h"
#include "objstore/s3_client.h"

namespace cohort::objstore::testing {

class S3rver {
 public:
  // Started and answering, or an error saying what is missing (run scripts/install.sh --test).
  static absl::StatusOr<std::unique_ptr<S3rver>> Start(const std::string& bucket);
  ~S3rver();

  std::string endpoint() const { return endpoint_; }  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  const std::string& bucket() const { return bucket_; }
  // Options for a client of the bucket (the server's keys, small parts, quick retries).
  S3Options ClientOptions() const;
  // Stops the server (SIGKILL) to test a store that is down; Restart brings it back on the same
  // port and data.
  void Kill();
  absl::Status Restart();

 private:
  S3rver() = default;
  absl::Status Launch();

  testing_support::TempDir dir_{"s3rver"};
  std::string bucket_;
  int port_ = 0;
  std::string endpoint_;
  std::unique_ptr<Subprocess> process_;
};

// The s3rver program: $COHORT_S3RVER, else /opt/cohort-test-tools/node_modules/.bin/s3rver.
std::string S3rverProgram();

}  // namespace cohort::objstore::testing
