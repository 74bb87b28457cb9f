// A worker process for the communicator conformance tests (collectives_test.cc). Runs one
// scenario against the transport named on the command line and reports on stdout:
//   correctness   every collective, every dtype, sizes 0, 1, odd and large; prints "PASS"
//   die           ranks loop over allreduces; --victim kills itself (SIGKILL) while the others
//                 are inside a collective; survivors print "FAILED-AS-EXPECTED: <error>"
//   stall         like die, but the victim stops responding (sleeps) instead of dying
// Exit codes: 0 pass, 1 wrong result, 2 setup error, 3 collective error (expected in die/stall).
//
// Built twice: collective_worker passes host buffers; nccl_collective_worker (COHORT_CUDA
// builds, compiled with COHORT_TEST_DEVICE_BUFFERS) binds each rank to CUDA device
// local_rank % devices (--device auto: leaves the choice to the factory), asks for device
// buffers (CommunicatorOptions::device_buffers: "auto" means nccl) and stages every Allreduce
// and Broadcast buffer through device memory, so the same scenarios and checks run against the
// NCCL transport.

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cohort/comm/comm_factory.h"
#ifdef COHORT_TEST_DEVICE_BUFFERS
#include <cuda_runtime_api.h>
#endif

namespace {

using cohort::comm::Communicator;
using cohort::comm::DataType;
using cohort::comm::ReduceOp;

uint16_t FloatToHalf(float f) {
  // Exact for the small integers used here.
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (f == 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (exp << 10) | (mant >> 13));
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0 && mant == 0) {
    float z;
    std::memcpy(&z, &sign, 4);
    return z;
  }
  uint32_t x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

#ifdef COHORT_TEST_DEVICE_BUFFERS
constexpr bool kDeviceBuffers = true;

absl::Status Cuda(const char* call, cudaError_t error) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(error)));
}

// Runs `op` on a device copy of the `bytes` at `host`, then copies the result back.
template <typename Op>
absl::Status InPlace(void* host, size_t bytes, Op&& op) {
  void* device = nullptr;
  if (absl::Status s = Cuda("cudaMalloc", cudaMalloc(&device, bytes == 0 ? 1 : bytes)); !s.ok()) {
    return s;
  }
  absl::Status status = Cuda("cudaMemcpy", cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  if (status.ok()) status = op(device);
  if (status.ok()) {
    status = Cuda("cudaMemcpy", cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  }
  cudaFree(device);
  return status;
}

// Binds this rank to its GPU: device local_rank % devices. The device, or -1 with the reason.
int BindDevice(std::string* why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    *why = absl::StrCat("no CUDA device: cudaGetDeviceCount: ", cudaGetErrorString(error));
    return -1;
  }
  const char* local = std::getenv("COHORT_LOCAL_RANK");
  const int device = (local != nullptr ? std::atoi(local) : 0) % count;
  error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    *why = absl::StrCat("cudaSetDevice(", device, "): ", cudaGetErrorString(error));
    return -1;
  }
  return device;
}
#else
constexpr bool kDeviceBuffers = false;

template <typename Op>
absl::Status InPlace(void* host, size_t bytes, Op&& op) {
  return op(host);
}

int BindDevice(std::string* why) { return -1; }
#endif

absl::Status AllreduceOf(Communicator& comm, void* data, size_t count, DataType dtype,
                         ReduceOp op) {
  return InPlace(data, count * cohort::comm::DataTypeSize(dtype),
                 [&](void* buffer) { return comm.Allreduce(buffer, count, dtype, op); });
}

absl::Status BroadcastOf(Communicator& comm, void* data, size_t bytes, int root) {
  return InPlace(data, bytes, [&](void* buffer) { return comm.Broadcast(buffer, bytes, root); });
}

// Element i of rank r holds (r + 1) * (i % 13 + 1): small integers, exact in every dtype.
double Input(int rank, size_t i) { return (rank + 1) * static_cast<double>(i % 13 + 1); }

int Fail(const std::string& what) {
  std::printf("WRONG: %s\n", what.c_str());
  std::fflush(stdout);
  return 1;
}

template <typename T>
std::vector<T> Fill(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(Input(rank, i));
  return v;
}

int CheckAllreduce(Communicator& comm, DataType dtype, size_t count, ReduceOp op) {
  const int n = comm.size();
  const double rank_sum = n * (n + 1) / 2.0;
  std::vector<char> buf(count * cohort::comm::DataTypeSize(dtype));
  auto expected = [&](size_t i) {
    double sum = rank_sum * (i % 13 + 1);
    if (op == ReduceOp::kSum) return sum;
    if (dtype == DataType::kInt32 || dtype == DataType::kInt64) return std::trunc(sum / n);
    return sum / n;
  };
  for (size_t i = 0; i < count; ++i) {
    double v = Input(comm.rank(), i);
    switch (dtype) {
      case DataType::kFloat32:
        reinterpret_cast<float*>(buf.data())[i] = v;
        break;
      case DataType::kFloat64:
        reinterpret_cast<double*>(buf.data())[i] = v;
        break;
      case DataType::kFloat16:
        reinterpret_cast<uint16_t*>(buf.data())[i] = FloatToHalf(v);
        break;
      case DataType::kInt32:
        reinterpret_cast<int32_t*>(buf.data())[i] = v;
        break;
      case DataType::kInt64:
        reinterpret_cast<int64_t*>(buf.data())[i] = v;
        break;
    }
  }
  absl::Status s = AllreduceOf(comm, buf.data(), count, dtype, op);
  std::string what = absl::StrCat("allreduce ", cohort::comm::DataTypeName(dtype), " count ", count,
                                  op == ReduceOp::kSum ? " sum" : " avg");
  if (!s.ok()) return Fail(absl::StrCat(what, ": ", s.ToString()));
  for (size_t i = 0; i < count; ++i) {
    double got = 0;
    switch (dtype) {
      case DataType::kFloat32:
        got = reinterpret_cast<float*>(buf.data())[i];
        break;
      case DataType::kFloat64:
        got = reinterpret_cast<double*>(buf.data())[i];
        break;
      case DataType::kFloat16:
        got = HalfToFloat(reinterpret_cast<uint16_t*>(buf.data())[i]);
        break;
      case DataType::kInt32:
        got = reinterpret_cast<int32_t*>(buf.data())[i];
        break;
      case DataType::kInt64:
        got = reinterpret_cast<int64_t*>(buf.data())[i];
        break;
    }
    double want = expected(i);
    double tol = dtype == DataType::kFloat16 ? 1e-3 * std::abs(want) : 1e-6 * std::abs(want);
    // NCCL averages fp16 by multiplying each rank's value by 1/n in fp16 before the sum: one
    // rounding per term (2^-11 each) and per addition.
    if (kDeviceBuffers && dtype == DataType::kFloat16 && op == ReduceOp::kAverage) {
      tol = std::ldexp(1.0, -11) * (n + 1) * std::abs(want);
    }
    if (std::abs(got - want) > tol) {
      return Fail(absl::StrCat(what, ": element ", i, " is ", got, ", expected ", want));
    }
  }
  return 0;
}

// Allreduces of `large_bytes` (none when 0): float32, then half the bytes in float64 plus an odd
// tail, so a last chunk is shorter than the others (the hierarchical transport pipelines large
// buffers in chunks).
int CheckLarge(Communicator& comm, size_t large_bytes) {
  if (large_bytes == 0) return 0;
  if (int rc = CheckAllreduce(comm, DataType::kFloat32, large_bytes / 4, ReduceOp::kSum)) {
    return rc;
  }
  return CheckAllreduce(comm, DataType::kFloat64, large_bytes / 16 + 12345, ReduceOp::kAverage);
}

int Correctness(Communicator& comm, size_t large_bytes) {
  const int n = comm.size();
  const int r = comm.rank();
  std::vector<size_t> counts = {0, 1, 7, 1001, 100003};
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64,
                         DataType::kInt32, DataType::kInt64}) {
    for (size_t count : counts) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
        if (int rc = CheckAllreduce(comm, dtype, count, op)) return rc;
      }
    }
  }
  if (int rc = CheckLarge(comm, large_bytes)) return rc;
  // Repeated small allreduces catch slot-reuse races in pipelined transports.
  for (int iter = 0; iter < 200; ++iter) {
    if (int rc = CheckAllreduce(comm, DataType::kFloat32, 3 + iter % 5, ReduceOp::kSum)) {
      return rc;
    }
  }
  // Broadcast from every root, several sizes.
  for (int root = 0; root < n; ++root) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, large_bytes}) {
      std::vector<char> buf(bytes);
      for (size_t i = 0; i < bytes; ++i)
        buf[i] = static_cast<char>(r == root ? (i * 7 + root) : 0x5a);
      absl::Status s = BroadcastOf(comm, buf.data(), bytes, root);
      if (!s.ok()) return Fail(absl::StrCat("broadcast root ", root, ": ", s.ToString()));
      for (size_t i = 0; i < bytes; ++i) {
        if (buf[i] != static_cast<char>(i * 7 + root)) {
          return Fail(absl::StrCat("broadcast root ", root, " bytes ", bytes, ": byte ", i));
        }
      }
    }
  }
  // Allgather and Gather of strings of different lengths (rank 0's is empty).
  auto mine = [](int rank) {
    std::string s;
    for (int i = 0; i < rank * 1000 + (rank % 2) * 3; ++i)
      s.push_back(static_cast<char>('a' + (i + rank) % 26));
    return s;
  };
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto all = comm.Allgather(mine(r));
    if (!all.ok()) return Fail(absl::StrCat("allgather: ", all.status().ToString()));
    if (static_cast<int>(all->size()) != n) return Fail("allgather: wrong number of strings");
    for (int k = 0; k < n; ++k) {
      if ((*all)[k] != mine(k)) return Fail(absl::StrCat("allgather: string of rank ", k));
    }
  }
  for (int root : {0, n - 1}) {
    auto got = comm.Gather(mine(r), root);
    if (!got.ok()) return Fail(absl::StrCat("gather: ", got.status().ToString()));
    if (r == root) {
      if (static_cast<int>(got->size()) != n) return Fail("gather: wrong number of strings");
      for (int k = 0; k < n; ++k) {
        if ((*got)[k] != mine(k)) return Fail(absl::StrCat("gather root ", root, ": rank ", k));
      }
    } else if (!got->empty()) {
      return Fail("gather: non-root received strings");
    }
  }
  for (int i = 0; i < 5; ++i) {
    absl::Status s = comm.Barrier();
    if (!s.ok()) return Fail(absl::StrCat("barrier: ", s.ToString()));
  }
  std::printf("PASS rank %d transport %s\n", r, std::string(comm.transport()).c_str());
  std::fflush(stdout);
  return 0;
}

// Loops over allreduces of `bytes`; the victim dies or stalls at iteration 5.
int Fault(Communicator& comm, bool die, int victim, size_t bytes) {
  std::vector<float> buf(bytes / 4, 1.0f);
  for (int iter = 0; iter < 1000000; ++iter) {
    if (comm.rank() == victim && iter == 5) {
      std::printf("VICTIM %s at %.3f\n", die ? "dying" : "stalling",
                  absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
      std::fflush(stdout);
      // Give the others time to enter the collective, so they fail mid-collective.
      absl::SleepFor(absl::Milliseconds(300));
      if (die) ::kill(::getpid(), SIGKILL);
      absl::SleepFor(absl::Hours(1));
    }
    absl::Status s = AllreduceOf(comm, buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum);
    if (!s.ok()) {
      std::printf("FAILED-AS-EXPECTED at %.3f: %s\n",
                  absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()), s.ToString().c_str());
      std::fflush(stdout);
      return 3;
    }
    std::fill(buf.begin(), buf.end(), 1.0f);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string transport = "auto", scenario = "correctness", device = "bind";
  int victim = 1;
  size_t large_bytes = 64u << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--transport")
      transport = value;
    else if (flag == "--scenario")
      scenario = value;
    else if (flag == "--victim")
      victim = std::stoi(value);
    else if (flag == "--device")
      device = value;
    else if (flag == "--large-bytes")
      large_bytes = std::stoull(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto parsed = cohort::comm::ParseTransport(transport);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
    return 2;
  }
  cohort::comm::CommunicatorOptions options;
  options.transport = *parsed;
  if (kDeviceBuffers) {
    std::string why;
    options.device_buffers = true;
    // "auto": the factory picks the device (NcclCommunicator::DefaultDevice).
    options.cuda_device = device == "auto" ? -1 : BindDevice(&why);
    if (device != "auto" && options.cuda_device < 0) {
      std::printf("SETUP-ERROR: %s\n", why.c_str());
      return 2;
    }
  }
  auto comm = cohort::comm::CreateCommunicatorFromEnv(options);
  if (!comm.ok()) {
    std::printf("SETUP-ERROR: %s\n", comm.status().ToString().c_str());
    return 2;
  }
  if (scenario == "correctness") return Correctness(**comm, large_bytes);
  if (scenario == "die") return Fault(**comm, true, victim, 4u << 20);
  if (scenario == "stall") return Fault(**comm, false, victim, 4u << 20);
  std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
  return 2;
}
