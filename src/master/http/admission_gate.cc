#include "master/http/admission_gate.h"

#include <algorithm>

namespace cohort::master::http {

AdmissionGate::AdmissionGate(int slots) : slots_(std::max(1, slots)) {}

int64_t AdmissionGate::waiting() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(waiters_.size());
}

// Each thread parks on a Parker of its own that lives as long as the thread, so Leave may wake it
// after releasing every lock (the woken thread does not wake into a held one) and a waiter that
// returns at once cannot take the Parker's memory with it.
void AdmissionGate::Enter() {
  thread_local Parker parker;
  {
    MutexLock lock(&mu_);
    if (running_ < slots_) {
      ++running_;
      return;
    }
    waiters_.push_back(&parker);
  }
  // Leave hands its slot over: running_ stays counted.
  MutexLock lock(&parker.mu);
  while (!parker.admitted) parker.wakeup.Wait(&parker.mu);
  parker.admitted = false;
}

void AdmissionGate::Leave() {
  Parker* next = nullptr;
  {
    MutexLock lock(&mu_);
    if (waiters_.empty()) {
      --running_;
      return;
    }
    next = waiters_.front();
    waiters_.pop_front();
  }
  {
    MutexLock lock(&next->mu);
    next->admitted = true;
  }
  next->wakeup.Signal();
}

}  // namespace cohort::master::http
