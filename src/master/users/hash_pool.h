#pragma once
// HashPool: where the master's password work runs (Argon2id: about 0.1 s of a core and 64 MiB
// each; docs/security.md, "Users and tokens"). A few threads of their own, at a lower CPU
// priority than the request handlers (nice 10), take jobs from a queue of bounded length: a
// job that finds the queue full is refused at once (Unavailable, which the HTTP layer answers
// 503), so a flood of logins neither holds the request handlers everyone else needs nor
// queues ahead of them, and costs at most `threads` x 64 MiB.
//
// Thread-safe. The destructor runs the jobs queued (their callers wait for them) and joins.
//
// Example:
//   HashPool pool({.threads = 2, .max_queued = 8});
//   bool match = false;
//   COHORT_RETURN_IF_ERROR(pool.Run([&] { match = VerifyPassword(hash, password).value(); }));

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cohort::master::users {

struct HashPoolOptions {
  int threads = 2;
  int max_queued = 8;  // jobs waiting for a thread; one more is refused at once
  // How long a caller waits for its job to start; past it the job is dropped (Unavailable).
  absl::Duration start_deadline = absl::Seconds(10);
};

class HashPool {
 public:
  explicit HashPool(HashPoolOptions options = {});
  ~HashPool();
  HashPool(const HashPool&) = delete;
  HashPool& operator=(const HashPool&) = delete;

  // Runs `job` on a pool thread and waits until it is done: OK once it ran; Unavailable ("too
  // many logins at once: try again in a second") at once when max_queued jobs wait already, or
  // when it has not started within start_deadline.
  absl::Status Run(std::function<void()> job);

  // Jobs waiting for a thread now (tests, monitoring).
  int Queued() const;

 private:
  struct Job {
    std::function<void()> work;
    bool started = false;
    bool done = false;
  };
  void Loop();

  const HashPoolOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace cohort::master::users
