// A worker program for the cohort-launch tests (launch_test.cc). Modes:
//   env                     prints NAME=value (or "NAME unset") for the worker variables
//   spam LINES LENGTH       writes LINES lines of LENGTH characters to stdout in 777-byte
//                           writes that ignore line boundaries, then a last line without '\n'
//   stop VICTIM ACTION OTHERS
//                           all ranks meet in the launcher's store and print READY; then rank
//                           VICTIM does ACTION (exit:N, kill = SIGKILL itself, none) and the
//                           others do OTHERS: sleep (die on SIGTERM), ignore-term, or
//                           report-term (print GOT-SIGTERM and exit 0 on SIGTERM)
//   rendezvous [--allreduce]
//                           joins the job (comm::Rendezvous), exchanges a key with every rank
//                           through the store and prints RDZV-OK with its topology; with
//                           --allreduce also sums (rank + 1) over a communicator and prints
//                           ALLREDUCE-OK sum=S (or ALLREDUCE-UNAVAILABLE: why, which fails only
//                           when COHORT_TEST_REQUIRE_ALLREDUCE=1)
// Every wait has a deadline; a worker never outlives 120 s.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cohort/comm/comm_factory.h"
#include "cohort/comm/topology.h"
#include "comm/rendezvous.h"
#include "comm/tcp_store.h"

namespace {

constexpr absl::Duration kMaxLife = absl::Seconds(120);

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) std::_Exit(10);
    done += static_cast<size_t>(n);
  }
}

void Say(const std::string& line) { WriteAll(STDOUT_FILENO, line + "\n"); }

int Rank() { return std::atoi(std::getenv("COHORT_RANK") ? std::getenv("COHORT_RANK") : "0"); }

int Env() {
  for (const char* name :
       {"COHORT_RANK", "COHORT_SIZE", "COHORT_LOCAL_RANK", "COHORT_LOCAL_SIZE",
        "COHORT_CROSS_RANK", "COHORT_CROSS_SIZE", "COHORT_CHIEF_ADDR", "COHORT_RENDEZVOUS_PORT",
        "COHORT_NETWORK_INTERFACE", "COHORT_LAUNCHER", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS", "COHORT_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "COHORT_GPU_SLOT"}) {
    const char* value = std::getenv(name);
    Say(value ? absl::StrCat(name, "=", value) : absl::StrCat(name, " unset"));
  }
  return 0;
}

// Line i of rank r: "r<r>-l<i>-" then filler up to `length` characters.
std::string SpamLine(int rank, int i, int length) {
  std::string line = absl::StrCat("r", rank, "-l", i, "-");
  line.resize(static_cast<size_t>(length), static_cast<char>('a' + (rank * 7 + i) % 26));
  return line;
}

int Spam(int lines, int length) {
  const int rank = Rank();
  std::string all;
  for (int i = 0; i < lines; ++i) all += SpamLine(rank, i, length) + "\n";
  all += absl::StrCat("tail-r", rank);  // no newline: the launcher must flush it at EOF
  for (size_t pos = 0; pos < all.size(); pos += 777) {
    WriteAll(STDOUT_FILENO, all.substr(pos, 777));
  }
  return 0;
}

volatile sig_atomic_t g_got_term = 0;
void OnTerm(int) { g_got_term = 1; }

// Sleeps until SIGTERM is noted (with report-term's handler) or the deadline.
int Linger() {
  absl::Time deadline = absl::Now() + kMaxLife;
  while (absl::Now() < deadline) {
    if (g_got_term) {
      Say("GOT-SIGTERM");
      return 0;
    }
    ::usleep(20000);
  }
  Say("STILL-ALIVE-AT-DEADLINE");
  return 99;
}

int Stop(int victim, const std::string& action, const std::string& others) {
  const int rank = Rank();
  if (rank != victim) {
    if (others == "ignore-term") ::signal(SIGTERM, SIG_IGN);
    if (others == "report-term") ::signal(SIGTERM, OnTerm);
  }
  auto topology = cohort::comm::TopologyFromEnv();
  if (!topology.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", topology.status().ToString()));
    return 2;
  }
  auto store = cohort::comm::TcpStore::Connect(
      {topology->chief_addr, topology->rendezvous_port}, cohort::comm::TcpStore::Options{});
  if (!store.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", store.status().ToString()));
    return 2;
  }
  std::vector<std::string> keys;
  for (int r = 0; r < topology->size; ++r) keys.push_back(absl::StrCat("test/ready/", r));
  absl::Status met = (*store)->Set(keys[rank], "1");
  if (met.ok()) met = (*store)->Wait(keys, absl::Seconds(60));
  if (!met.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", met.ToString()));
    return 2;
  }
  Say("READY");
  // The victim acts only once every rank's READY is in the launcher's pipes.
  std::vector<std::string> said;
  for (int r = 0; r < topology->size; ++r) said.push_back(absl::StrCat("test/said/", r));
  absl::Status set_said = (*store)->Set(said[rank], "1");
  if (!set_said.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", set_said.ToString()));
    return 2;
  }
  if (rank == victim) {
    absl::Status all_said = (*store)->Wait(said, absl::Seconds(60));
    if (!all_said.ok()) {
      Say(absl::StrCat("SETUP-ERROR ", all_said.ToString()));
      return 2;
    }
    if (action == "kill") ::raise(SIGKILL);
    int code = 0;
    if (action.rfind("exit:", 0) == 0 && absl::SimpleAtoi(action.substr(5), &code)) return code;
  }
  return Linger();
}

int RendezvousCheck(bool allreduce) {
  auto topology = cohort::comm::TopologyFromEnv();
  if (!topology.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", topology.status().ToString()));
    return 2;
  }
  auto rendezvous = cohort::comm::Rendezvous::Join(*topology);
  if (!rendezvous.ok()) {
    Say(absl::StrCat("SETUP-ERROR ", rendezvous.status().ToString()));
    return 2;
  }
  const auto& store = (*rendezvous)->store();
  const int rank = topology->rank;
  absl::Status set = store->Set(absl::StrCat("test/rank/", rank),
                                absl::StrCat(rank, "@node", topology->cross_rank));
  if (!set.ok()) {
    Say(absl::StrCat("STORE-ERROR ", set.ToString()));
    return 3;
  }
  for (int r = 0; r < topology->size; ++r) {
    auto value = store->Get(absl::StrCat("test/rank/", r), absl::Seconds(60));
    std::string expected_prefix = absl::StrCat(r, "@node");
    if (!value.ok() || value->rfind(expected_prefix, 0) != 0) {
      Say(absl::StrCat("STORE-ERROR rank ", r, ": ",
                       value.ok() ? *value : value.status().ToString()));
      return 3;
    }
  }
  Say(absl::StrCat("RDZV-OK rank=", rank, " size=", topology->size,
                   " local_rank=", topology->local_rank, " local_size=", topology->local_size,
                   " cross_rank=", topology->cross_rank, " cross_size=", topology->cross_size));
  if (!allreduce) return 0;
  const bool required = std::getenv("COHORT_TEST_REQUIRE_ALLREDUCE") != nullptr;
  auto comm = cohort::comm::CreateCommunicator(*rendezvous, {});
  absl::Status status = comm.status();
  float value = static_cast<float>(rank + 1);
  if (status.ok()) {
    status = (*comm)->Allreduce(&value, 1, cohort::comm::DataType::kFloat32,
                                cohort::comm::ReduceOp::kSum);
  }
  if (!status.ok()) {
    Say(absl::StrCat("ALLREDUCE-UNAVAILABLE: ", status.ToString()));
    return required ? 4 : 0;
  }
  Say(absl::StrCat("ALLREDUCE-OK sum=", value));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "env") return Env();
  if (args.size() == 3 && args[0] == "spam") return Spam(std::atoi(args[1].c_str()),
                                                           std::atoi(args[2].c_str()));
  if (args.size() == 4 && args[0] == "stop") {
    return Stop(std::atoi(args[1].c_str()), args[2], args[3]);
  }
  if (!args.empty() && args[0] == "rendezvous") {
    return RendezvousCheck(args.size() > 1 && args[1] == "--allreduce");
  }
  std::fprintf(stderr, "usage: launch_test_worker env | spam LINES LENGTH | "
                       "stop VICTIM ACTION OTHERS | rendezvous [--allreduce]\n");
  return 2;
}
