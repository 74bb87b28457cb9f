#include "objstore/testing/s3rver.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/net.h"

namespace cohort::objstore::testing {

std::string S3rverProgram() {
  if (const char* program = std::getenv("COHORT_S3RVER"); program != nullptr && *program != '\0') {
    return program;
  }
  return "/opt/cohort-test-tools/node_modules/.bin/s3rver";
}

absl::StatusOr<std::unique_ptr<S3rver>> S3rver::Start(const std::string& bucket) {
  if (::access(S3rverProgram().c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(S3rverProgram(), " is missing: run scripts/install.sh --test (it installs "
                                      "npm's s3rver), or set COHORT_S3RVER"));
  }
  std::unique_ptr<S3rver> server(new S3rver());
  server->bucket_ = bucket;
  // A free port: bound by the kernel, released, then taken by s3rver (another process taking
  // it in between makes Launch fail, not hang).
  int port = 0;
  COHORT_ASSIGN_OR_RETURN(int fd, net::Listen("127.0.0.1", 0, &port));
  ::close(fd);
  server->port_ = port;
  server->endpoint_ = absl::StrCat("http://127.0.0.1:", port);
  COHORT_RETURN_IF_ERROR(server->Launch());
  return server;
}

absl::Status S3rver::Launch() {
  SubprocessOptions options;
  options.argv = {S3rverProgram(), "-d", dir_.path(), "-a", "127.0.0.1", "-p",
                  std::to_string(port_), "--configure-bucket", bucket_, "--silent"};
  options.parent_death_signal = SIGKILL;
  COHORT_ASSIGN_OR_RETURN(process_, Subprocess::Start(options));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    absl::StatusOr<int> fd =
        net::Connect({"127.0.0.1", port_}, absl::Now() + absl::Milliseconds(200), "s3rver");
    if (fd.ok()) {
      ::close(*fd);
      return absl::OkStatus();
    }
    if (std::optional<int> exited = process_->Poll()) {
      std::string output;
      process_->ReadAvailable(&output, absl::ZeroDuration());
      return absl::UnavailableError(
          absl::StrCat("s3rver exited with status ", *exited, " before answering: ", output));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("s3rver did not answer on port ", port_,
                                                  " within 20 s"));
}

S3Options S3rver::ClientOptions() const {
  S3Options options;
  options.bucket = bucket_;
  options.endpoint_url = endpoint_;
  options.credentials = {"S3RVER", "S3RVER", "", "the test's s3rver"};
  options.part_bytes = 5 << 20;
  options.first_backoff = absl::Milliseconds(20);
  options.max_attempts = 3;
  options.connect_timeout = absl::Seconds(2);
  options.stall_timeout = absl::Seconds(5);
  return options;
}

void S3rver::Kill() {
  if (process_ == nullptr) return;
  process_->Signal(SIGKILL);
  (void)process_->Wait(absl::Seconds(10));
  process_.reset();
}

absl::Status S3rver::Restart() {
  Kill();
  return Launch();
}

S3rver::~S3rver() {
  if (process_ == nullptr) return;
  process_->Signal(SIGTERM);
  if (!process_->Wait(absl::Seconds(5)).ok()) {
    process_->Signal(SIGKILL);
    (void)process_->Wait(absl::Seconds(5));
  }
}

}  // namespace cohort::objstore::testing
