#include "master/http/admission_gate.h"

#include <algorithm>

namespace cohort::master::http {

AdmissionGate::AdmissionGate(int slots) : slots_(std::max(1, slots)) {}

int64_t AdmissionGate::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(waiters_.size());
}

void AdmissionGate::Enter() {
  std::unique_lock<std::mutex> lock(mu_);
  if (running_ < slots_) {
    ++running_;
    return;
  }
  Waiter me;
  waiters_.push_back(&me);
  // Leave hands its slot over (running_ stays counted) and sets `admitted` under mu_, so `me`
  // outlives every use Leave makes of it.
  me.wakeup.wait(lock, [&me] { return me.admitted; });
}

void AdmissionGate::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  if (waiters_.empty()) {
    --running_;
    return;
  }
  Waiter* next = waiters_.front();
  waiters_.pop_front();
  next->admitted = true;
  next->wakeup.notify_one();
}

}  // namespace cohort::master::http
