#pragma once
// The subcommands of cohort-bench. Each Add*Command registers its flags on `app` and returns
// the options it fills; Run*Command runs it after parsing and returns the process exit code.
// Adding a benchmark: declare its pair here, implement it in <name>_bench.cc, wire it in
// cohort_bench.cc.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "comm/half_allreduce.h"

namespace cohort::bench {

struct AllreduceOptions {
  size_t bytes = 16u << 20;
  int iters = 20;
  int warmup = 5;
  std::string transport = "auto";
  std::string dtype = "fp32";
  bool check = false;
  bool explain = false;  // print the shm transport's measured path choice first
  // fp32 buffers sent as fp16 (comm::AllreduceAsHalf, the gradient reducer's compression), in
  // pipelined chunks of this many elements.
  bool compress = false;
  size_t chunk_elements = comm::kHalfAllreduceChunkElements;
};

CLI::App* AddAllreduceCommand(CLI::App& app, AllreduceOptions& options);
int RunAllreduceCommand(const AllreduceOptions& options);

struct TrainOptions {
  std::string model = "cnn";
  // "cpu", or "cuda" / "cuda:N" with a CUDA build of LibTorch (one rank there: the gradient
  // reducer is CPU-only so far).
  std::string device = "cpu";
  int per_slot_batch = 64;
  int steps = 50;
  int warmup = 5;
  int aggregation_frequency = 1;
  bool compression = false;
  double fusion_mb = 64;
  bool auto_tune = false;
  bool overlap = true;
  std::string transport = "auto";
  int threads = 1;
  double lr = 0.01;
  // "fused": Cohort's FusedSGD with StepAndZeroGrad; "torch": torch::optim::SGD, step() then
  // zero_grad() (what the DDP peer runs).
  std::string optimizer = "fused";
  uint64_t seed = 0;
  std::string data_dir;
  // Non-empty: after the timed steps, profile_steps more steps are profiled (each rank's
  // phases and gradient buckets, runtime/step_profiler.h) and rank 0 writes the step timeline
  // of every rank to PROFILE_DIR/trace.json (Trace Event Format) and prints how much of the
  // buckets' communication overlapped the backward pass.
  std::string profile_dir;
  int profile_steps = 3;
  // Non-empty: profile_steps more steps (after the timed and --profile-dir ones) under
  // LibTorch's own profiler; rank 0 writes its operators and, on a GPU, kernels to this Chrome
  // trace (bench/op_trace.h), to compare with torch.profiler's (bench/compare_traces.py).
  std::string op_trace;
};

CLI::App* AddTrainCommand(CLI::App& app, TrainOptions& options);
int RunTrainCommand(const TrainOptions& options);

// cohort-bench master: the master under the load of simulated agents (master_bench.cc).
struct MasterBenchOptions {
  int agents = 20;
  int slots = 8;  // per agent
  int experiments = 10;
  int trials_per_experiment = 100;         // random searcher trials, 1 slot each
  double trial_seconds = 10;               // how long a simulated trial runs
  double trial_seconds_jitter = 0;         // each runs trial_seconds x (1 +- this), uniformly
  double log_lines_per_second = 2000;      // all running trials together
  double metric_reports_per_second = 500;  // all running trials together
  double seconds = 30;                     // the load's duration
  int flush_ms = 500;                      // how often a simulated agent posts (as cohort-agent)
  int agents_nice = 0;       // the simulated agents' threads' nice value (the master keeps 0)
  bool kill_restart = true;  // SIGKILL the master halfway, restart it, count what was lost
  // One post per agent and flush with every allocation's output (POST /agents/{id}/outputs,
  // design 0014's way 2), as cohort-agent, instead of one per allocation and kind.
  bool agent_wide_posts = true;
  // > 0: each agent long-polls on a thread of its own for up to this long (as cohort-agent,
  // whose poll waits 5 s unless an action comes); 0: one poll of flush_ms per flush.
  double poll_seconds = 5;
  double warmup_seconds = 10;            // latencies are also shown for the requests begun after it
  std::string master;                    // cohort-master; default: beside this program
  std::vector<std::string> master_args;  // more of cohort-master's flags
  // The master's databases, one run each, side by side: "sqlite" (a file in the data
  // directory), "postgresql" (a throwaway server this benchmark starts).
  std::vector<std::string> databases = {"sqlite"};
};

CLI::App* AddMasterCommand(CLI::App& app, MasterBenchOptions& options);
int RunMasterCommand(const MasterBenchOptions& options);

}  // namespace cohort::bench
