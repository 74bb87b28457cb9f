// cohort-bench allreduce: bus bandwidth of Communicator::Allreduce (sum) on one buffer.
// Every rank runs `warmup` untimed, then `iters` timed allreduces back to back on the same
// buffer; rank 0 reports the median of its per-iteration times (see RunAllreduceCommand).

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_commands.h"
#include "cohort/comm/comm_factory.h"
#include "comm/half_allreduce.h"
#include "comm/internal/reduce_kernels.h"
#include "comm/internal/shm_tuning.h"
#include "comm/shm_communicator.h"

namespace cohort::bench {
namespace {

using comm::DataType;

void Fill(std::vector<char>& buf, DataType dtype, int rank) {
  if (dtype == DataType::kFloat16) {
    auto* p = reinterpret_cast<uint16_t*>(buf.data());
    const uint16_t v = comm::internal::FloatToHalf(static_cast<float>(rank + 1) / 8);
    std::fill(p, p + buf.size() / 2, v);
  } else {
    auto* p = reinterpret_cast<float*>(buf.data());
    std::fill(p, p + buf.size() / 4, static_cast<float>(rank + 1));
  }
}

// The first element of the reduced `buf` that is not the sum of every rank's Fill (rank r
// contributes r + 1, fp16 ranks (r + 1) / 8), as an error naming it; OK when all are.
absl::Status CheckSum(const std::vector<char>& buf, size_t count, DataType dtype, int ranks) {
  const double want =
      dtype == DataType::kFloat16 ? ranks * (ranks + 1) / 16.0 : ranks * (ranks + 1) / 2.0;
  for (size_t i = 0; i < count; ++i) {
    const double got =
        dtype == DataType::kFloat16
            ? comm::internal::HalfToFloat(reinterpret_cast<const uint16_t*>(buf.data())[i])
            : reinterpret_cast<const float*>(buf.data())[i];
    if (std::abs(got - want) > 1e-3 * want) {
      return absl::DataLossError(absl::StrCat("element ", i, " is ", got, ", expected ", want));
    }
  }
  return absl::OkStatus();
}

// This machine's memory bandwidth at `bytes`, measured in the same run so that every figure
// can be read against it (issue 40): the median of 7 memcpys of that size after a first one
// that faults the pages in, in GB/s of bytes copied.
double MemcpyGBps(size_t bytes) {
  if (bytes == 0) return 0;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes);
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    const volatile char last = to[bytes - 1];  // the copy must happen
    (void)last;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return bytes / seconds[3] / 1e9;
}

// Rank 0's JSON line: the median of `seconds` (sorted here), the bandwidths of `bytes`, and a
// memcpy of `bytes` on this machine for scale.
void PrintResult(const AllreduceOptions& options, const comm::Communicator& c, size_t bytes,
                 std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const size_t m = seconds.size();
  const double median = m % 2 ? seconds[m / 2] : (seconds[m / 2 - 1] + seconds[m / 2]) / 2;
  const int n = c.size();
  const double algbw = bytes / median / 1e9;
  const double busbw = algbw * 2.0 * (n - 1) / n;
  const std::string compress =
      options.compress
          ? absl::StrCat("\"compress\":\"fp16\",\"chunk_elements\":", options.chunk_elements, ",")
          : "";
  std::printf(
      "{\"op\":\"allreduce\",\"ranks\":%d,\"bytes\":%zu,\"transport\":\"%s\",\"dtype\":\"%s\","
      "%s\"iters\":%d,\"time_ms\":%.4f,\"time_stat\":\"median\",\"algbw_GBps\":%.3f,"
      "\"busbw_GBps\":%.3f,\"memcpy_GBps\":%.3f}\n",
      n, bytes, std::string(c.transport()).c_str(), options.dtype.c_str(), compress.c_str(),
      options.iters, median * 1e3, algbw, busbw, MemcpyGBps(bytes));
  std::fflush(stdout);
}

// --explain: the shared-memory communicator's tuning (other transports choose nothing yet).
void Explain(const comm::Communicator& c) {
  const auto* shm = dynamic_cast<const comm::ShmCommunicator*>(&c);
  if (shm == nullptr) {
    std::printf("transport %s: no measured path choice (only the shm transport has one)\n",
                std::string(c.transport()).c_str());
  } else {
    std::printf("%s", comm::internal::ExplainShmTuning(shm->tuning(), c.size()).c_str());
  }
  std::fflush(stdout);
}

}  // namespace

CLI::App* AddAllreduceCommand(CLI::App& app, AllreduceOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "allreduce",
      "Allreduce (sum) bandwidth. Rank 0 prints one JSON line: time_ms is the median over the "
      "timed iterations of rank 0's time per allreduce; busbw = algbw * 2(n-1)/n.");
  cmd->add_option("--bytes", options.bytes, "Buffer size in bytes (rounded down to whole elements)")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--iters", options.iters, "Timed iterations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--warmup", options.warmup, "Untimed iterations first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--transport", options.transport, "Communicator transport")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "shm", "gloo", "hierarchical"}));
  cmd->add_option("--dtype", options.dtype, "Element type")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16"}));
  cmd->add_flag("--check", options.check, "Verify the result of the last iteration");
  cmd->add_flag("--explain", options.explain,
                "Rank 0 first prints how the shared-memory allreduce chose its path per size "
                "class on this machine: the candidates' measured times and the choice (or that "
                "the environment or the cache fixed it)");
  cmd->add_flag("--compress", options.compress,
                "fp32 buffers with fp16 on the wire, as the gradient reducer's "
                "gradient_compression sends them (conversions included in the time; bytes and "
                "bandwidth count the fp32 buffer)");
  cmd->add_option("--chunk-elements", options.chunk_elements,
                  "With --compress: elements per pipelined chunk (at least the buffer's: one "
                  "piece, no overlap of the conversions)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return cmd;
}

int RunAllreduceCommand(const AllreduceOptions& options) {
  auto transport = comm::ParseTransport(options.transport);
  auto dtype = comm::ParseDataType(options.dtype);
  if (!transport.ok() || !dtype.ok()) {
    std::fprintf(stderr, "cohort-bench allreduce: %s\n",
                 (!transport.ok() ? transport.status() : dtype.status()).ToString().c_str());
    return 2;
  }
  if (options.compress && *dtype != DataType::kFloat32) {
    std::fprintf(stderr, "cohort-bench allreduce: --compress sends fp32 buffers as fp16: drop "
                         "--dtype fp16\n");
    return 2;
  }
  comm::CommunicatorOptions comm_options;
  comm_options.name = "bench";
  comm_options.transport = *transport;
  auto created = comm::CreateCommunicatorFromEnv(comm_options);
  if (!created.ok()) {
    std::fprintf(stderr, "cohort-bench allreduce: %s\n", created.status().ToString().c_str());
    return 2;
  }
  comm::Communicator& c = **created;
  if (options.explain && c.rank() == 0) Explain(c);
  const size_t esize = comm::DataTypeSize(*dtype);
  const size_t count = options.bytes / esize;
  const size_t bytes = count * esize;
  std::vector<char> buf(bytes);
  std::vector<uint16_t> wire;  // --compress
  Fill(buf, *dtype, c.rank());

  // Times are rank 0's. An allreduce cannot finish on any rank before every rank has
  // contributed, and each iteration starts right after the previous one ends everywhere, so
  // per-iteration times agree across ranks to within a barrier's latency.
  std::vector<double> seconds;
  absl::Status status = c.Barrier();
  for (int i = 0; status.ok() && i < options.warmup + options.iters; ++i) {
    if (options.check) Fill(buf, *dtype, c.rank());
    const absl::Time start = absl::Now();
    status = options.compress
                 ? comm::AllreduceAsHalf(c, reinterpret_cast<float*>(buf.data()), count, 1.0f,
                                         &wire, options.chunk_elements)
                 : c.Allreduce(buf.data(), count, *dtype, comm::ReduceOp::kSum);
    if (i >= options.warmup) seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  if (!status.ok()) {
    std::fprintf(stderr, "cohort-bench allreduce: rank %d: %s\n", c.rank(),
                 status.ToString().c_str());
    return 3;
  }
  if (options.check) {
    if (absl::Status sum = CheckSum(buf, count, *dtype, c.size()); !sum.ok()) {
      std::fprintf(stderr, "cohort-bench allreduce: rank %d: %s\n", c.rank(),
                   std::string(sum.message()).c_str());
      return 1;
    }
  }
  if (c.rank() == 0) PrintResult(options, c, bytes, std::move(seconds));
  // Keep rank 0's store (if it hosts one) alive until everyone is done.
  status = c.Barrier();
  return status.ok() ? 0 : 3;
}

}  // namespace cohort::bench
