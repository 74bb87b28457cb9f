// s3_checkpoint_bench: saving and restoring a checkpoint through Cohort's S3 layout
// (objstore::S3Checkpoints: multipart uploads and ranged downloads in parallel) side by side with
// `aws s3 cp` (Debian's awscli) for the same bytes, against one S3-compatible server started
// here (npm's s3rver on loopback), in one invocation. Prints each side's throughput, the ratio,
// and this process's peak memory (Cohort's transfers run in it; awscli runs in its own).
//
//   build/bench/s3_checkpoint_bench --bytes 1073741824 --repeat 3
//
// Needs s3rver (scripts/install.sh --bench or --test) and awscli (scripts/install.sh --bench).

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/net.h"
#include "common/subprocess.h"
#include "objstore/s3_checkpoints.h"
#include "objstore/s3_client.h"

namespace {

namespace fs = std::filesystem;
using cohort::Subprocess;

struct Flags {
  int64_t bytes = 1LL << 30;
  int repeat = 3;
  std::string s3rver = "/opt/cohort-test-tools/node_modules/.bin/s3rver";
  std::string aws = "/usr/bin/aws";
  std::string scratch = "/tmp";
  int parallel = 4;
  int64_t part_mib = 16;
};

double PeakRssMiB() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// Runs `argv` with the server's keys in the environment; its exit status.
int Run(const std::vector<std::string>& argv) {
  cohort::SubprocessOptions options;
  options.argv = argv;
  options.env = {{"AWS_ACCESS_KEY_ID", "S3RVER"},
                 {"AWS_SECRET_ACCESS_KEY", "S3RVER"},
                 {"AWS_DEFAULT_REGION", "us-east-1"},
                 {"AWS_PAGER", ""}};
  absl::StatusOr<std::unique_ptr<Subprocess>> child = Subprocess::Start(options);
  if (!child.ok()) return -1;
  std::string out;
  while ((*child)->ReadAvailable(&out, absl::Milliseconds(200), 1 << 16)) {
    if (out.size() > (1 << 16)) out.erase(0, out.size() - (1 << 15));
  }
  absl::StatusOr<int> status = (*child)->Wait(absl::Minutes(30));
  if (!status.ok() || *status != 0) std::fprintf(stderr, "%s failed: %s\n", argv[0].c_str(),
                                                 out.c_str());
  return status.ok() ? *status : -1;
}

double Seconds(absl::Time since) { return absl::ToDoubleSeconds(absl::Now() - since); }

// The checkpoint: one file of `bytes` (not all zeros) in top/ckpt.
void MakeCheckpoint(const fs::path& top, int64_t bytes) {
  fs::create_directories(top / "ckpt");
  std::ofstream out(top / "ckpt" / "model.pt", std::ios::binary);
  std::string block(1 << 20, '\0');
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 131 + 7);
  for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(block.size())) {
    out.write(block.data(), std::min<int64_t>(left, static_cast<int64_t>(block.size())));
  }
}

// s3rver on a free loopback port with its data in top/data and the bucket "bench", answering.
absl::StatusOr<std::unique_ptr<Subprocess>> StartServer(const Flags& f, const fs::path& top,
                                                        std::string* endpoint) {
  fs::create_directories(top / "data");
  int port = 0;
  absl::StatusOr<int> fd = cohort::net::Listen("127.0.0.1", 0, &port);
  if (!fd.ok()) return fd.status();
  ::close(*fd);
  *endpoint = absl::StrCat("http://127.0.0.1:", port);
  cohort::SubprocessOptions options;
  options.argv = {f.s3rver, "-d", (top / "data").string(), "-a", "127.0.0.1", "-p",
                  std::to_string(port), "--configure-bucket", "bench", "--silent"};
  options.parent_death_signal = SIGKILL;
  absl::StatusOr<std::unique_ptr<Subprocess>> server = Subprocess::Start(options);
  if (!server.ok()) return server.status();
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<int> c = cohort::net::Connect({"127.0.0.1", port},
                                                 absl::Now() + absl::Milliseconds(100), "s3rver");
    if (c.ok()) {
      ::close(*c);
      return server;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError("s3rver did not answer within 10 s");
}

// One run: save then restore through each side, printed as two rows. False on a failure.
bool OneRun(const Flags& f, int run, const fs::path& top, const std::string& endpoint,
            cohort::objstore::S3Checkpoints& checkpoints) {
  const double mib = static_cast<double>(f.bytes) / (1 << 20);
  const std::string id = absl::StrCat("ck-", run);
  const std::string aws_key = absl::StrCat("s3://bench/aws/", id, "/model.pt");
  absl::Time t = absl::Now();
  if (absl::Status s = checkpoints.Store(id, (top / "ckpt").string()); !s.ok()) {
    std::fprintf(stderr, "cohort save: %s\n", s.ToString().c_str());
    return false;
  }
  const double cohort_save = Seconds(t);
  t = absl::Now();
  if (Run({f.aws, "--endpoint-url", endpoint, "s3", "cp", (top / "ckpt" / "model.pt").string(),
           aws_key, "--only-show-errors"}) != 0) {
    return false;
  }
  const double aws_save = Seconds(t);
  std::printf("%-8s %4d %14.1f %14.1f %7.2fx\n", "save", run, mib / cohort_save, mib / aws_save,
              aws_save / cohort_save);
  const fs::path into = top / absl::StrCat("restore-", run);
  fs::create_directories(into);
  t = absl::Now();
  if (absl::Status s = checkpoints.Fetch(id, into.string()); !s.ok()) {
    std::fprintf(stderr, "cohort restore: %s\n", s.ToString().c_str());
    return false;
  }
  const double cohort_restore = Seconds(t);
  fs::remove_all(into);
  t = absl::Now();
  if (Run({f.aws, "--endpoint-url", endpoint, "s3", "cp", aws_key, (into / "model.pt").string(),
           "--only-show-errors"}) != 0) {
    return false;
  }
  const double aws_restore = Seconds(t);
  fs::remove_all(into);
  std::printf("%-8s %4d %14.1f %14.1f %7.2fx\n", "restore", run, mib / cohort_restore,
              mib / aws_restore, aws_restore / cohort_restore);
  std::fflush(stdout);
  (void)checkpoints.Delete(id);
  (void)Run({f.aws, "--endpoint-url", endpoint, "s3", "rm", "--recursive",
             absl::StrCat("s3://bench/aws/", id), "--only-show-errors"});
  return true;
}

int Bench(const Flags& f) {
  const fs::path top = fs::path(f.scratch) / absl::StrCat("cohort-s3-bench-", ::getpid());
  MakeCheckpoint(top, f.bytes);
  std::string endpoint;
  absl::StatusOr<std::unique_ptr<Subprocess>> server = StartServer(f, top, &endpoint);
  if (!server.ok()) {
    std::fprintf(stderr, "s3rver: %s\n", server.status().ToString().c_str());
    return 1;
  }
  cohort::objstore::S3Options options;
  options.bucket = "bench";
  options.endpoint_url = endpoint;
  options.credentials = {"S3RVER", "S3RVER", "", "bench"};
  options.parallel = f.parallel;
  options.part_bytes = f.part_mib << 20;
  absl::StatusOr<std::unique_ptr<cohort::objstore::S3Client>> client =
      cohort::objstore::S3Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  cohort::objstore::S3Checkpoints checkpoints(*std::move(client), "cohort");
  std::printf("%.0f MiB checkpoint, s3rver at %s, %d parts of %lld MiB in flight\n",
              static_cast<double>(f.bytes) / (1 << 20), endpoint.c_str(), f.parallel,
              static_cast<long long>(f.part_mib));
  std::printf("%-8s %4s %14s %14s %8s\n", "op", "run", "cohort MiB/s", "aws s3 MiB/s", "ratio");
  int status = 0;
  for (int run = 1; run <= f.repeat && status == 0; ++run) {
    if (!OneRun(f, run, top, endpoint, checkpoints)) status = 1;
  }
  std::printf("peak memory of this process (Cohort's transfers): %.0f MiB\n", PeakRssMiB());
  (*server)->Signal(SIGTERM);
  (void)(*server)->Wait(absl::Seconds(10));
  fs::remove_all(top);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Checkpoint save and restore through Cohort's S3 client against `aws s3 cp`, "
               "side by side on one local s3rver."};
  Flags f;
  app.add_option("--bytes", f.bytes, "the checkpoint's size")->capture_default_str();
  app.add_option("--repeat", f.repeat, "runs of each")->capture_default_str();
  app.add_option("--parallel", f.parallel, "Cohort's parts in flight")->capture_default_str();
  app.add_option("--part-mib", f.part_mib, "Cohort's part size")->capture_default_str();
  app.add_option("--s3rver", f.s3rver, "npm's s3rver")->capture_default_str();
  app.add_option("--aws", f.aws, "the AWS CLI")->capture_default_str();
  app.add_option("--scratch", f.scratch, "where the files go")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return Bench(f);
}
