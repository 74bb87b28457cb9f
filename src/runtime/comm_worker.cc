#include "runtime/comm_worker.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace cohort::runtime {

CommWorker::CommWorker(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { Run(); });
}

CommWorker::~CommWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void CommWorker::Submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  work_cv_.notify_one();
}

absl::Status CommWorker::Drain(absl::Duration timeout, absl::string_view what) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  bool done = done_cv_.wait_until(lock, deadline,
                                  [this] { return queue_.empty() && running_ == 0; });
  if (!error_.ok()) return error_;
  if (!done) {
    return absl::DeadlineExceededError(
        absl::StrCat(name_, ": ", what, " did not finish within ", absl::FormatDuration(timeout),
                     " (", queue_.size() + running_, " unfinished)"));
  }
  return absl::OkStatus();
}

void CommWorker::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left to run
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    const bool skip = !error_.ok();
    lock.unlock();
    absl::Status status = skip ? absl::OkStatus() : job();
    lock.lock();
    --running_;
    if (!status.ok() && error_.ok()) error_ = std::move(status);
    done_cv_.notify_all();
  }
}

}  // namespace cohort::runtime
