#pragma once
// AdmissionGate: at most `slots` requests run their handlers at once; the others wait in
// arrival order (FIFO), each parked on its thread's own condition variable: a slot is handed to
// the longest waiter with one wake-up, given after the gate's lock is released.
//
// Why: cpp-httplib serves every connection on a thread of its own (a thousand at 200 agents),
// and on a machine with a few cores hundreds of handlers then share the CPU and queue on the
// master's lock and the database's, each hand-off a context switch. A request that waits at the
// gate costs nothing; one admitted runs with a core and the locks nearly to itself, so a
// handler's time is its own work rather than everyone's (docs/design/0012, "a gate before the
// handlers").
//
// Routes that wait for events (long polls, follows) must not pass the gate: a waiting handler
// would hold a slot while the requests it waits for queue behind it (RouteOptions::waits). So
// the wait at the gate needs no deadline of its own: every admitted handler ends without waiting
// for anything but locks and the database, and a waiter waits for the handlers ahead of it.
//
// Thread-safe.
//
// Example:
//   AdmissionGate gate(4);
//   {
//     AdmissionGate::Ticket ticket(gate);  // waits for a slot
//     ...                                  // the handler
//   }                                      // the slot passes to the longest waiter

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace cohort::master::http {

class AdmissionGate {
 public:
  explicit AdmissionGate(int slots);
  AdmissionGate(const AdmissionGate&) = delete;
  AdmissionGate& operator=(const AdmissionGate&) = delete;

  // Holds a slot from construction (waiting for one) to destruction.
  class Ticket {
   public:
    explicit Ticket(AdmissionGate& gate) : gate_(gate) { gate_.Enter(); }
    ~Ticket() { gate_.Leave(); }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    AdmissionGate& gate_;
  };

  int slots() const { return slots_; }
  // Requests waiting for a slot now (for the master's metrics and tests).
  int64_t waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Enter() ABSL_LOCKS_EXCLUDED(mu_);
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  // Where one thread waits for its slot (one per thread, thread_local: see the .cc).
  struct Parker {
    Mutex mu;
    CondVar wakeup;
    bool admitted ABSL_GUARDED_BY(mu) = false;
  };

  const int slots_;
  mutable Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Parker*> waiters_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace cohort::master::http
