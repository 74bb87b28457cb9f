#include "master/users/hash_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace cohort::master::users {
namespace {

// Requests come first: a hash may wait, an agent's post should not.
constexpr int kNice = 10;

absl::Status Busy() {
  return absl::UnavailableError("too many logins at once: try again in a second");
}

}  // namespace

HashPool::HashPool(HashPoolOptions options) : options_(options) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

HashPool::~HashPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

int HashPool::Queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

absl::Status HashPool::Run(std::function<void()> work) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  absl::MutexLock lock(&mu_);
  if (stopping_ || static_cast<int>(queue_.size()) >= options_.max_queued) return Busy();
  queue_.push_back(job);
  const auto started = [&job]() { return job->started; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&started), options_.start_deadline)) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), job));  // not started: never will be
    return Busy();
  }
  const auto done = [&job]() { return job->done; };
  mu_.Await(absl::Condition(&done));  // a started hash ends in its own time (about 0.1 s)
  return absl::OkStatus();
}

void HashPool::Loop() {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), kNice);
  for (;;) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      job = queue_.front();
      queue_.pop_front();
      job->started = true;
    }
    job->work();
    absl::MutexLock lock(&mu_);
    job->done = true;
  }
}

}  // namespace cohort::master::users
