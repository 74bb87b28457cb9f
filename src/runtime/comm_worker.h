#pragma once
// CommWorker: one background thread that runs communication jobs (gradient bucket allreduces)
// strictly in submission order, so every rank issues its collectives in the same order while
// the training thread goes on with the backward pass. No LibTorch.
//
// Errors: the first failing job's status is kept; later jobs are skipped (a failed collective
// leaves the communicator broken) and every Drain returns that status.
//
// Thread-safety: Submit and Drain may be called from any thread; jobs run on the worker thread
// only. The destructor waits for the jobs already submitted.
//
// Example:
//   CommWorker worker("gradients");
//   worker.Submit([&] { return comm->Allreduce(buf, n, kFloat32, kSum); });
//   ... more work on this thread ...
//   COHORT_RETURN_IF_ERROR(worker.Drain(absl::Minutes(5), "gradient allreduces"));

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cohort::runtime {

class CommWorker {
 public:
  using Job = std::function<absl::Status()>;

  explicit CommWorker(std::string name);
  ~CommWorker();
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // Queues `job` to run after every job submitted before it.
  void Submit(Job job);

  // Waits until every submitted job has run. Returns the first job failure (sticky), or
  // DeadlineExceeded naming `what` and how many jobs are unfinished when `timeout` passes first.
  absl::Status Drain(absl::Duration timeout, absl::string_view what);

 private:
  void Run();

  const std::string name_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // signalled when a job is queued or on shutdown
  std::condition_variable done_cv_;  // signalled when a job finishes
  std::deque<Job> queue_;
  int running_ = 0;                  // jobs taken off the queue and not finished
  absl::Status error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cohort::runtime
